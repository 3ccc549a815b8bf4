// Labels from a table's column (--labels-column): integers as they are (class numbers ≥ 0),
// floats where they are whole numbers, strings (and dictionary-encoded strings) numbered by
// their first appearance, so a column of class names colours the map too.
#include <arrow/api.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_map>

#include "io/arrow_table.hpp"
#include "io/table_io.hpp"

namespace surfgrad::io {

namespace {

Error label_error(const std::string& file, const std::string& column, int64_t row, const std::string& what) {
  return Error(ErrorKind::Value,
               "'" + file + "': labels column '" + column + "', row " + std::to_string(row) + " " + what);
}

// Class numbers of the strings of `a` (string, large string or their dictionary), first seen first.
class Categories {
 public:
  int32_t of(std::string_view s) {
    auto [it, fresh] = ids_.try_emplace(std::string(s), int32_t(ids_.size()));
    if (fresh) names_.push_back(it->first);
    return it->second;
  }
  std::vector<std::string>& names() { return names_; }

 private:
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<std::string> names_;  // by class number
};

void take(const arrow::Array& a, int64_t base, std::vector<int32_t>& out, Categories& cats, const std::string& file,
          const std::string& column) {
  const int64_t n = a.length();
  for (int64_t i = 0; i < n; ++i)
    if (a.IsNull(i)) throw label_error(file, column, base + i, "is null; give every point a label (or leave it out)");
  auto number = [&](double x, int64_t i) {
    if (!(x >= 0 && x <= double(std::numeric_limits<int32_t>::max()) && x == std::floor(x))) {
      char shown[32];
      std::snprintf(shown, sizeof shown, "%.17g", x);
      throw label_error(file, column, base + i,
                        std::string("is ") + shown + "; numeric labels must be whole numbers from 0 to 2147483647");
    }
    out.push_back(int32_t(x));
  };
  auto strings = [&](const auto& arr) {
    for (int64_t i = 0; i < n; ++i) out.push_back(cats.of(arr.GetView(i)));
  };
  auto numbers = [&](const auto& arr) {
    for (int64_t i = 0; i < n; ++i) number(double(arr.Value(i)), i);
  };
  switch (a.type_id()) {
    case arrow::Type::STRING: return strings(static_cast<const arrow::StringArray&>(a));
    case arrow::Type::LARGE_STRING: return strings(static_cast<const arrow::LargeStringArray&>(a));
    case arrow::Type::STRING_VIEW: return strings(static_cast<const arrow::StringViewArray&>(a));
    case arrow::Type::DICTIONARY: {
      const auto& d = static_cast<const arrow::DictionaryArray&>(a);
      std::vector<int32_t> ids;  // the dictionary's values as class numbers
      take(*d.dictionary(), 0, ids, cats, file, column);
      for (int64_t i = 0; i < n; ++i) {
        int64_t k = d.GetValueIndex(i);
        if (k < 0 || k >= int64_t(ids.size()))
          throw label_error(file, column, base + i, "points past its dictionary; the file is corrupt: write it again");
        out.push_back(ids[size_t(k)]);
      }
      return;
    }
    case arrow::Type::INT8: return numbers(static_cast<const arrow::Int8Array&>(a));
    case arrow::Type::INT16: return numbers(static_cast<const arrow::Int16Array&>(a));
    case arrow::Type::INT32: return numbers(static_cast<const arrow::Int32Array&>(a));
    case arrow::Type::INT64: return numbers(static_cast<const arrow::Int64Array&>(a));
    case arrow::Type::UINT8: return numbers(static_cast<const arrow::UInt8Array&>(a));
    case arrow::Type::UINT16: return numbers(static_cast<const arrow::UInt16Array&>(a));
    case arrow::Type::UINT32: return numbers(static_cast<const arrow::UInt32Array&>(a));
    case arrow::Type::UINT64: return numbers(static_cast<const arrow::UInt64Array&>(a));
    case arrow::Type::FLOAT: return numbers(static_cast<const arrow::FloatArray&>(a));
    case arrow::Type::DOUBLE: return numbers(static_cast<const arrow::DoubleArray&>(a));
    default: break;
  }
  throw Error(ErrorKind::DType, "'" + file + "': labels column '" + column + "' is " + a.type()->ToString() +
                                    "; labels are integers, whole floats or strings (class names)");
}

}  // namespace

std::vector<int32_t> read_table_labels(const std::string& path, const std::string& column, int64_t n,
                                       std::vector<std::string>* names) {
  ArrowTable table(path);
  int field = choose_column(table.columns(), column, path, "--labels-column");
  std::vector<int32_t> out;
  out.reserve(
      size_t(std::max<int64_t>(0, std::min<int64_t>(n, table.declared_rows() < 0 ? n : table.declared_rows()))));
  Categories cats;
  auto reader = table.batches({field}, int64_t(1) << 16);
  arrow_guard(path, "reading labels column '" + column + "'", [&] {
    for (;;) {
      std::shared_ptr<arrow::RecordBatch> batch;
      check_arrow(reader->ReadNext(&batch), path, "reading labels column '" + column + "'");
      if (!batch) break;
      if (int64_t(out.size()) + batch->num_rows() > n) break;
      take(*batch->column(0), int64_t(out.size()), out, cats, path, column);
    }
  });
  if (int64_t(out.size()) != n)
    throw Error(ErrorKind::Shape, "'" + path + "': labels column '" + column +
                                      "' does not have one label for each of the " + std::to_string(n) + " points");
  if (names) *names = std::move(cats.names());
  return out;
}

}  // namespace surfgrad::io
