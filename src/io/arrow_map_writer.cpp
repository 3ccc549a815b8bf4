// A map written as Parquet: x, y (float32) and the input's columns named by --keep carried
// through batch by batch (or id, the row number), in row groups as the rows arrive.
#include <arrow/api.h>
#include <arrow/io/api.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>

#include <algorithm>
#include <cstring>

#include "io/arrow_table.hpp"
#include "io/file_format.hpp"
#include "io/input_limits.hpp"
#include "io/table_io.hpp"

namespace surfgrad::io {

namespace {

constexpr int64_t kRowGroupRows = int64_t(1) << 20;   // rows of a row group (and of a batch written)
constexpr int64_t kKeptBatchRows = int64_t(1) << 16;  // rows of a batch of kept columns read from the input

bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

// x or y (component c) of rows [r0, r0 + n) of the map as a float32 array.
std::shared_ptr<arrow::Array> component(const float* xy, int64_t r0, int64_t n, int c, const std::string& out) {
  auto buf = check_arrow(arrow::AllocateBuffer(n * 4), out, "allocating a column");
  float* dst = reinterpret_cast<float*>(buf->mutable_data());
  for (int64_t i = 0; i < n; ++i) dst[i] = xy[2 * (r0 + i) + c];
  return std::make_shared<arrow::FloatArray>(n, std::move(buf));
}

std::shared_ptr<arrow::Array> row_numbers(int64_t r0, int64_t n, const std::string& out) {
  auto buf = check_arrow(arrow::AllocateBuffer(n * 8), out, "allocating a column");
  int64_t* dst = reinterpret_cast<int64_t*>(buf->mutable_data());
  for (int64_t i = 0; i < n; ++i) dst[i] = r0 + i;
  return std::make_shared<arrow::Int64Array>(n, std::move(buf));
}

}  // namespace

bool is_table_file(const std::string& path) {
  for (const char* e : {".parquet", ".arrow", ".feather", ".arrows", ".ipc"})
    if (ends_with(path, e)) return true;
  FileFormat f = sniff_format(path);
  if (f == FileFormat::Parquet) return true;
  char magic[6] = {};
  if (FILE* fp = std::fopen(path.c_str(), "rb")) {
    size_t got = std::fread(magic, 1, 6, fp);
    std::fclose(fp);
    return got == 6 && std::memcmp(magic, "ARROW1", 6) == 0;
  }
  return false;
}

bool is_parquet_output(const std::string& path) { return ends_with(path, ".parquet"); }

void check_kept_columns(const std::string& input, const std::vector<std::string>& keep) {
  if (keep.empty()) return;
  if (input.empty() || !is_table_file(input))
    throw Error(ErrorKind::Value,
                "--keep carries columns of a Parquet or Arrow input through to the map; " +
                    (input.empty() ? std::string("there is no INPUT") : "'" + input + "' is not a table") +
                    ": leave --keep out");
  ArrowTable table(input);
  choose_kept_columns(table.columns(), keep, input);
}

void check_labels_column(const std::string& input, const std::string& column) {
  if (input.empty() || !is_table_file(input))
    throw Error(ErrorKind::Value,
                "--labels-column takes labels from a column of a Parquet or Arrow input; " +
                    (input.empty() ? std::string("there is no INPUT") : "'" + input + "' is not one") +
                    ": use --labels FILE");
  ArrowTable table(input);
  choose_column(table.columns(), column, input, "--labels-column");
}

void write_map_parquet(const std::string& out, const float* xy, int64_t n, const std::string& input,
                       const std::vector<std::string>& keep, const std::string& labels_column) {
  if (out == "-")
    throw Error(ErrorKind::Value,
                "-o -: Parquet cannot be written to standard output (its footer is written last "
                "and read first); name a file");
  std::unique_ptr<ArrowTable> table;
  std::vector<int> kept;
  arrow::FieldVector fields = {arrow::field(kMapX, arrow::float32(), false),
                               arrow::field(kMapY, arrow::float32(), false)};
  if (keep.empty()) fields.push_back(arrow::field(kMapId, arrow::int64(), false));
  if (!keep.empty() || !labels_column.empty()) {
    table = std::make_unique<ArrowTable>(input);
    kept = choose_kept_columns(table->columns(), keep, input);
    for (int k : kept) fields.push_back(table->schema()->field(k));
    // The labels column rides along as `label` unless --keep carries it already.
    if (!labels_column.empty() && std::find(keep.begin(), keep.end(), labels_column) == keep.end()) {
      for (const auto& f : fields)
        if (f->name() == kMapLabel)
          throw Error(ErrorKind::Value, "'" + input + "': --labels-column " + labels_column +
                                            " would be written as 'label', and --keep carries a column 'label' "
                                            "already; keep " +
                                            labels_column + " instead (--keep …," + labels_column +
                                            ") or leave 'label' out of --keep");
      int l = choose_column(table->columns(), labels_column, input, "--labels-column");
      kept.push_back(l);
      fields.push_back(table->schema()->field(l)->WithName(kMapLabel));
    }
  }
  auto schema = arrow::schema(fields);
  arrow_guard(out, "writing the map as Parquet", [&] {
    auto sink = check_arrow(arrow::io::FileOutputStream::Open(out), out, "opening it for writing");
    parquet::WriterProperties::Builder props;
    props.max_row_group_length(kRowGroupRows);
    props.compression(arrow::util::Codec::IsAvailable(arrow::Compression::SNAPPY) ? arrow::Compression::SNAPPY
                                                                                  : arrow::Compression::UNCOMPRESSED);
    auto arrow_props = parquet::ArrowWriterProperties::Builder().store_schema()->build();
    auto writer = check_arrow(
        parquet::arrow::FileWriter::Open(*schema, arrow::default_memory_pool(), sink, props.build(), arrow_props), out,
        "starting the Parquet file");
    auto write = [&](int64_t r0, int64_t rows, std::vector<std::shared_ptr<arrow::Array>> rest) {
      std::vector<std::shared_ptr<arrow::Array>> cols = {component(xy, r0, rows, 0, out),
                                                         component(xy, r0, rows, 1, out)};
      for (auto& c : rest) cols.push_back(std::move(c));
      check_arrow(writer->WriteRecordBatch(*arrow::RecordBatch::Make(schema, rows, cols)), out, "writing rows");
    };
    if (!table) {
      for (int64_t r0 = 0; r0 < n; r0 += kRowGroupRows) {
        int64_t rows = std::min(kRowGroupRows, n - r0);
        write(r0, rows, {row_numbers(r0, rows, out)});
      }
    } else {
      auto reader = table->batches(kept, kKeptBatchRows);
      int64_t r0 = 0;
      for (;;) {
        std::shared_ptr<arrow::RecordBatch> batch;
        check_arrow(reader->ReadNext(&batch), input, "reading the columns to keep");
        if (!batch) break;
        if (r0 + batch->num_rows() > n) {
          r0 += batch->num_rows();
          break;
        }
        auto cols = batch->columns();
        if (keep.empty()) cols.insert(cols.begin(), row_numbers(r0, batch->num_rows(), out));
        write(r0, batch->num_rows(), std::move(cols));
        r0 += batch->num_rows();
      }
      if (r0 != n)
        throw file_error(input, "has a different number of rows now than the " + std::to_string(n) +
                                    " points mapped (it changed while the map ran?); map it again");
    }
    check_arrow(writer->Close(), out, "finishing the Parquet file");
    check_arrow(sink->Close(), out, "closing it");
  });
}

}  // namespace surfgrad::io
