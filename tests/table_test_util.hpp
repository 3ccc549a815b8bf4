// Parquet and Arrow IPC files for the table tests, made at run time with Arrow C++ itself
// (nothing committed): points as a list, fixed-size-list or numeric columns, plus id and text.
#pragma once
#if SURFGRAD_HAS_ARROW
#include <arrow/api.h>
#include <arrow/io/api.h>
#include <arrow/ipc/api.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>
#include <parquet/metadata.h>

#include <cmath>
#include <string>
#include <vector>

namespace table_test {

// Point i, dimension j: distinct, non-zero, not all equal.
inline float value(int64_t i, int64_t j) { return float(std::sin(double(i * 131 + j * 7 + 1)) * 3.0); }

inline void ok(const arrow::Status& s) {
  if (!s.ok()) throw std::runtime_error(s.ToString());
}
template <typename T>
T ok(arrow::Result<T> r) {
  ok(r.status());
  return std::move(r).ValueUnsafe();
}

enum class Layout { FixedList, List, LargeList };

// The points column of n rows × d (f32, or f64 where `f64`), with hooks to spoil a row:
// `len(i)` a row's length (ragged lists), `null_row` a null row, `nan_row` a NaN in it.
struct Points {
  int64_t n = 10, d = 4;
  Layout layout = Layout::FixedList;
  bool f64 = false;
  int64_t null_row = -1, nan_row = -1, short_row = -1, null_value_row = -1;
};

inline std::shared_ptr<arrow::Array> points_array(const Points& p) {
  auto pool = arrow::default_memory_pool();
  std::shared_ptr<arrow::ArrayBuilder> values;
  if (p.f64)
    values = std::make_shared<arrow::DoubleBuilder>(pool);
  else
    values = std::make_shared<arrow::FloatBuilder>(pool);
  std::unique_ptr<arrow::ArrayBuilder> b;
  if (p.layout == Layout::FixedList)
    b = std::make_unique<arrow::FixedSizeListBuilder>(pool, values, int32_t(p.d));
  else if (p.layout == Layout::List)
    b = std::make_unique<arrow::ListBuilder>(pool, values);
  else
    b = std::make_unique<arrow::LargeListBuilder>(pool, values);
  for (int64_t i = 0; i < p.n; ++i) {
    if (i == p.null_row) {
      ok(b->AppendNull());
      continue;
    }
    if (p.layout == Layout::FixedList)
      ok(static_cast<arrow::FixedSizeListBuilder&>(*b).Append());
    else if (p.layout == Layout::List)
      ok(static_cast<arrow::ListBuilder&>(*b).Append());
    else
      ok(static_cast<arrow::LargeListBuilder&>(*b).Append());
    int64_t len = i == p.short_row ? p.d - 1 : p.d;
    for (int64_t j = 0; j < len; ++j) {
      if (i == p.null_value_row && j == 1) {
        ok(values->AppendNull());
        continue;
      }
      double v = i == p.nan_row && j == 2 ? std::nan("") : value(i, j);
      if (p.f64)
        ok(static_cast<arrow::DoubleBuilder&>(*values).Append(v));
      else
        ok(static_cast<arrow::FloatBuilder&>(*values).Append(float(v)));
    }
  }
  return ok(b->Finish());
}

// Columns id (int64) and text (string) of n rows.
inline std::shared_ptr<arrow::Array> ids(int64_t n) {
  arrow::Int64Builder b;
  for (int64_t i = 0; i < n; ++i) ok(b.Append(1000 + i));
  return ok(b.Finish());
}
inline std::shared_ptr<arrow::Array> texts(int64_t n) {
  arrow::StringBuilder b;
  for (int64_t i = 0; i < n; ++i) ok(b.Append("row " + std::to_string(i)));
  return ok(b.Finish());
}

inline std::shared_ptr<arrow::Table> table_of(std::vector<std::pair<std::string, std::shared_ptr<arrow::Array>>> cols) {
  arrow::FieldVector fields;
  arrow::ArrayVector arrays;
  for (auto& [name, a] : cols) fields.push_back(arrow::field(name, a->type())), arrays.push_back(a);
  return arrow::Table::Make(arrow::schema(fields), arrays);
}

inline void write_parquet(const std::shared_ptr<arrow::Table>& t, const std::string& path, int64_t row_group = 4) {
  auto out = ok(arrow::io::FileOutputStream::Open(path));
  auto arrow_props = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  ok(parquet::arrow::WriteTable(*t, arrow::default_memory_pool(), out, row_group, parquet::default_writer_properties(),
                                arrow_props));
  ok(out->Close());
}

// Arrow IPC: the file format (Feather v2) or a stream.
inline void write_ipc(const std::shared_ptr<arrow::Table>& t, const std::string& path, bool stream = false) {
  auto out = ok(arrow::io::FileOutputStream::Open(path));
  auto w =
      stream ? ok(arrow::ipc::MakeStreamWriter(out, t->schema())) : ok(arrow::ipc::MakeFileWriter(out, t->schema()));
  ok(w->WriteTable(*t, 3));
  ok(w->Close());
  ok(out->Close());
}

// A Parquet file's table, its row groups and the compression of its first column.
inline std::shared_ptr<arrow::Table> read_parquet(const std::string& path, int* row_groups = nullptr,
                                                  arrow::Compression::type* codec = nullptr) {
  auto in = ok(arrow::io::ReadableFile::Open(path));
  auto r = ok(parquet::arrow::OpenFile(in, arrow::default_memory_pool()));
  if (row_groups) *row_groups = r->num_row_groups();
  if (codec) *codec = r->parquet_reader()->metadata()->RowGroup(0)->ColumnChunk(0)->compression();
  return ok(r->ReadTable());
}

}  // namespace table_test
#endif
