// Points from a table (Parquet, Arrow IPC) on the host: batches of rows converted to f32 into a
// small stage, checked row by row (nulls, ragged lists, NaN), handed on in runs that never
// straddle a GPU block (arrow_point_blocks.cpp uploads them; the fuzz target checks them).
#include <arrow/api.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "io/arrow_table.hpp"
#include "io/host_formats.hpp"
#include "io/input_limits.hpp"
#include "io/table_io.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad::io {

namespace {

constexpr int64_t kBatchBytes = int64_t(4) << 20;  // f32 bytes of one batch read from a Parquet file
constexpr int64_t kUnknownDimsBatchRows = 4096;    // rows of a batch where a list's length is not declared

Error row_error(const std::string& file, const std::string& column, int64_t row, const std::string& what) {
  return Error(ErrorKind::Value, "'" + file + "': column '" + column + "', row " + std::to_string(row) + " " + what);
}

// Values [begin, begin + n) of a numeric array as f32 at dst[k * stride] (k < n).
void convert(const arrow::Array& a, int64_t begin, int64_t n, float* dst, int64_t stride) {
  auto run = [&](auto get) {
    for (int64_t k = 0; k < n; ++k) dst[k * stride] = get(begin + k);
  };
  const auto& p = static_cast<const arrow::PrimitiveArray&>(a);
  const uint8_t* raw = p.values() ? p.values()->data() : nullptr;
  int64_t off = a.offset();
  auto typed = [&](auto zero) {
    using T = decltype(zero);
    const T* v = reinterpret_cast<const T*>(raw) + off;
    run([&](int64_t i) { return float(v[i]); });
  };
  switch (a.type_id()) {
    case arrow::Type::FLOAT: typed(float()); break;
    case arrow::Type::DOUBLE: {
      const double* v = reinterpret_cast<const double*>(raw) + off;
      run([&](int64_t i) { return narrow_to_float(v[i]); });
      break;
    }
    case arrow::Type::HALF_FLOAT: {
      const uint16_t* v = reinterpret_cast<const uint16_t*>(raw) + off;
      run([&](int64_t i) { return half_to_float(v[i]); });
      break;
    }
    case arrow::Type::INT8: typed(int8_t()); break;
    case arrow::Type::INT16: typed(int16_t()); break;
    case arrow::Type::INT32: typed(int32_t()); break;
    case arrow::Type::INT64: typed(int64_t()); break;
    case arrow::Type::UINT8: typed(uint8_t()); break;
    case arrow::Type::UINT16: typed(uint16_t()); break;
    case arrow::Type::UINT32: typed(uint32_t()); break;
    case arrow::Type::UINT64: typed(uint64_t()); break;
    default: throw Error(ErrorKind::DType, "table column of " + a.type()->ToString() + " is not numeric");
  }
}

int64_t first_null(const arrow::Array& a, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    if (a.IsNull(i)) return i;
  return -1;
}

// Where rows of one batch go: a small staging buffer (kStageBytes, whole rows), handed to the
// sink whenever it fills or a block of `block_rows` ends, so runs never straddle a block and the
// host holds a few MiB of converted points, however large the file.
class BlockFiller {
 public:
  BlockFiller(int64_t max_block_bytes, int64_t declared_rows, const TableBlockSink& sink)
      : max_block_bytes_(max_block_bytes), declared_(declared_rows), sink_(sink) {}

  // Sets the dimensions (once). The buffer grows with the rows that really arrive, up to the
  // stage: a file that declares 10^9 rows and holds 50 costs 50.
  void start(int64_t dims) {
    dims_ = dims;
    block_rows_ = table_block_rows(max_block_bytes_, dims);
    stage_rows_ = std::clamp<int64_t>(kStageBytes / (dims * 4), 1, block_rows_);
  }
  int64_t dims() const { return dims_; }
  int64_t rows() const { return done_ + used_; }
  // Room for up to `want` rows at the buffer's end (at least one); commit() after filling them.
  float* room(int64_t want, int64_t& got) {
    if (used_ == stage_rows_ || (used_ > 0 && (done_ + used_) % block_rows_ == 0)) flush();
    got = std::min({want, stage_rows_ - used_, block_rows_ - (done_ + used_) % block_rows_});
    if (int64_t have = int64_t(buf_.size()) / dims_; used_ + got > have)
      buf_.resize(size_t(std::min(stage_rows_, std::max(used_ + got, 2 * have)) * dims_));
    return buf_.data() + used_ * dims_;
  }
  void commit(int64_t n) { used_ += n; }
  void flush() {
    if (used_ == 0) return;
    sink_(buf_.data(), done_, used_, dims_, declared_);
    done_ += used_;
    used_ = 0;
  }

 private:
  static constexpr int64_t kStageBytes = int64_t(16) << 20;
  int64_t max_block_bytes_, declared_;
  const TableBlockSink& sink_;
  int64_t dims_ = 0, block_rows_ = 0, stage_rows_ = 0, used_ = 0, done_ = 0;
  std::vector<float> buf_;
};

void check_finite(const float* rows, int64_t n, int64_t dims, int64_t first_row, const std::string& file,
                  const std::string& column) {
  // A branch-free pass first (it vectorises): NaN and ±inf are the floats whose exponent bits are all ones.
  uint32_t bad = 0;
  for (int64_t i = 0; i < n * dims; ++i) {
    uint32_t bits;
    std::memcpy(&bits, rows + i, 4);
    bad |= uint32_t((bits & 0x7f800000u) == 0x7f800000u);
  }
  if (!bad) return;
  for (int64_t i = 0; i < n * dims; ++i)
    if (!std::isfinite(rows[i]))
      throw row_error(file, column, first_row + i / dims,
                      "has a NaN or infinite value (or one beyond f32's range); surfgrad maps finite numbers only "
                      "(drop or impute that row)");
}

// Rows of one batch of a list column.
void take_list(const arrow::Array& col, BlockFiller& fill, const std::string& file, const std::string& name) {
  const int64_t n = col.length(), base = fill.rows();
  if (col.null_count() > 0)
    throw row_error(file, name, base + first_null(col, 0, n),
                    "is null (no point); drop the empty rows or fill them before mapping");
  auto offset_of = [&](int64_t i) -> int64_t {
    switch (col.type_id()) {
      case arrow::Type::LIST: return static_cast<const arrow::ListArray&>(col).value_offset(i);
      case arrow::Type::LARGE_LIST: return static_cast<const arrow::LargeListArray&>(col).value_offset(i);
      default: return static_cast<const arrow::FixedSizeListArray&>(col).value_offset(i);
    }
  };
  const arrow::Array& values = col.type_id() == arrow::Type::LIST ? *static_cast<const arrow::ListArray&>(col).values()
                               : col.type_id() == arrow::Type::LARGE_LIST
                                   ? *static_cast<const arrow::LargeListArray&>(col).values()
                                   : *static_cast<const arrow::FixedSizeListArray&>(col).values();
  if (n > 0 && fill.dims() == 0) {
    int64_t d = offset_of(1) - offset_of(0);
    if (col.type_id() == arrow::Type::FIXED_SIZE_LIST)
      d = static_cast<const arrow::FixedSizeListType&>(*col.type()).list_size();
    if (d < 1) throw row_error(file, name, base, "is an empty list; every point needs at least one value");
    fill.start(d);
  }
  const int64_t d = fill.dims();
  for (int64_t i = 0; i < n;) {
    int64_t got = 0;
    float* dst = fill.room(n - i, got);
    // Every row's length first; the rows' values are then one contiguous run (a list's rows
    // follow one another in its values), converted in one pass.
    const int64_t first = offset_of(i);
    for (int64_t k = 0; k < got; ++k) {
      int64_t begin = offset_of(i + k), len = offset_of(i + k + 1) - begin;
      if (col.type_id() == arrow::Type::FIXED_SIZE_LIST) len = d;
      if (len != d)
        throw row_error(file, name, base + i + k,
                        "has " + std::to_string(len) + " values, the rows before it " + std::to_string(d) +
                            " (every point the same length; ragged lists cannot be mapped)");
      if (begin < 0 || begin + d > values.length() || begin != first + k * d)
        throw row_error(file, name, base + i + k, "points past its values; the file is corrupt: write it again");
    }
    if (values.null_count() > 0)
      if (int64_t at = first_null(values, first, first + got * d); at >= 0)
        throw row_error(file, name, base + i + (at - first) / d,
                        "holds a null value; fill it or drop the row before mapping");
    if (values.type_id() == arrow::Type::FLOAT)
      std::memcpy(dst, static_cast<const arrow::FloatArray&>(values).raw_values() + first, size_t(got * d) * 4);
    else
      convert(values, first, got * d, dst, 1);
    check_finite(dst, got, d, base + i, file, name);
    fill.commit(got);
    i += got;
  }
}

// Rows of one batch of numeric columns (one a dimension).
void take_columns(const arrow::RecordBatch& batch, BlockFiller& fill, const std::string& file) {
  const int64_t n = batch.num_rows(), base = fill.rows(), d = batch.num_columns();
  if (fill.dims() == 0) fill.start(d);
  for (int c = 0; c < d; ++c)
    if (batch.column(c)->null_count() > 0)
      throw row_error(file, batch.schema()->field(c)->name(), base + first_null(*batch.column(c), 0, n),
                      "is null; fill it or drop the row before mapping");
  for (int64_t i = 0; i < n;) {
    int64_t got = 0;
    float* dst = fill.room(n - i, got);
    for (int c = 0; c < d; ++c) convert(*batch.column(c), i, got, dst + c, d);
    for (int64_t k = 0; k < got * d; ++k)
      if (!std::isfinite(dst[k]))
        check_finite(dst + k, 1, 1, base + i + k / d, file, batch.schema()->field(int(k % d))->name());
    fill.commit(got);
    i += got;
  }
}

}  // namespace

int64_t table_block_rows(int64_t max_block_bytes, int64_t dims) {
  return std::max<int64_t>(1, max_block_bytes / (dims * 4));
}

int64_t read_table_points(const std::string& path, const std::vector<std::string>& columns, int64_t max_block_bytes,
                          int64_t& dims, const TableBlockSink& block) {
  ArrowTable table(path);
  std::vector<int> fields = choose_point_columns(table.columns(), columns, path);
  const TableColumn& first = table.columns()[size_t(fields[0])];
  bool list = first.kind == ColumnKind::FloatList;
  int64_t known_dims = list ? 0 : int64_t(fields.size());
  if (list && table.schema()->field(fields[0])->type()->id() == arrow::Type::FIXED_SIZE_LIST)
    known_dims = static_cast<const arrow::FixedSizeListType&>(*table.schema()->field(fields[0])->type()).list_size();
  int64_t batch_rows = known_dims > 0 ? std::max<int64_t>(1, kBatchBytes / (known_dims * 4)) : kUnknownDimsBatchRows;
  std::string names = first.name;
  for (size_t i = 1; i < fields.size(); ++i) names += ", " + table.columns()[size_t(fields[i])].name;

  BlockFiller fill(max_block_bytes, table.declared_rows(), block);
  auto reader = table.batches(fields, batch_rows);
  arrow_guard(path, "reading column " + names, [&] {
    for (;;) {
      std::shared_ptr<arrow::RecordBatch> batch;
      check_arrow(reader->ReadNext(&batch), path, "reading column '" + names + "'");
      if (!batch) break;
      if (list)
        take_list(*batch->column(0), fill, path, first.name);
      else
        take_columns(*batch, fill, path);
    }
  });
  fill.flush();
  if (table.declared_rows() >= 0 && fill.rows() != table.declared_rows())
    throw file_error(path, "holds " + std::to_string(fill.rows()) + " rows of '" + names + "', its metadata declares " +
                               std::to_string(table.declared_rows()) + "; the file is corrupt: write it again");
  if (fill.rows() == 0) throw file_error(path, "no points in the file (column '" + names + "' has no rows)");
  dims = fill.dims();
  return fill.rows();
}

}  // namespace surfgrad::io
