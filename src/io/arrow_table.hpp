// Private to src/io: a Parquet or Arrow IPC (Feather v2) file opened through Apache Arrow C++,
// seen as its top-level columns and read as record batches of chosen columns. Every Arrow
// status and exception becomes an IO error naming the file; the readers and the map writer
// share this, so a file is recognised and checked the same way for points and for --keep.
#pragma once
#include <arrow/api.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/table_columns.hpp"
#include "surfgrad/error.hpp"

namespace parquet::arrow {
class FileReader;
}

namespace surfgrad::io {

class ArrowTable {
 public:
  // Opens `path` (Parquet by its magic "PAR1", else Arrow IPC: the file format, "ARROW1", or a
  // stream); reads its footer / schema only. Throws an IO error naming the file.
  explicit ArrowTable(std::string path);
  ~ArrowTable();

  const std::string& path() const { return path_; }
  const std::vector<TableColumn>& columns() const { return columns_; }
  const std::shared_ptr<arrow::Schema>& schema() const { return schema_; }
  // Rows the file's metadata declares (-1 for an IPC stream, which declares none). Untrusted:
  // nothing is allocated from it; the readers compare it with the rows they really read.
  int64_t declared_rows() const { return declared_rows_; }
  const char* format() const { return parquet_ ? "Parquet" : "Arrow IPC"; }

  // Batches of the columns `fields` (top-level indices, in this order) of about `batch_rows`
  // rows each (Parquet; IPC batches are the file's own).
  std::shared_ptr<arrow::RecordBatchReader> batches(const std::vector<int>& fields, int64_t batch_rows);

  // Parquet's row groups (0 for IPC) and the rows each declares (untrusted, as declared_rows).
  int row_groups() const;
  int64_t row_group_rows(int group) const;
  // A Parquet reader of its own (for one worker thread): batches of `fields` of one row group.
  using GroupBatches = std::function<std::shared_ptr<arrow::RecordBatchReader>(int group)>;
  GroupBatches group_batches(const std::vector<int>& fields, int64_t batch_rows);

 private:
  std::string path_;
  bool parquet_ = false, ipc_file_ = false;
  std::shared_ptr<arrow::io::RandomAccessFile> file_;
  std::unique_ptr<parquet::arrow::FileReader> parquet_reader_;
  std::shared_ptr<arrow::Schema> schema_;
  std::vector<TableColumn> columns_;
  int64_t declared_rows_ = -1;
};

// An Arrow status as an IO error about `file` ("could not be read as Parquet: …").
void check_arrow(const arrow::Status& status, const std::string& file, const std::string& doing);
template <typename T>
T check_arrow(arrow::Result<T> result, const std::string& file, const std::string& doing) {
  check_arrow(result.status(), file, doing);
  return std::move(result).ValueUnsafe();
}

// Runs `f`, turning exceptions from Arrow and Parquet (parquet::ParquetException, std::bad_alloc …)
// into surfgrad errors naming the file; surfgrad's own errors pass through.
template <typename F>
auto arrow_guard(const std::string& file, const std::string& doing, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error(ErrorKind::OutOfMemory, "'" + file + "': the host ran out of memory while " + doing +
                                            "; free memory (close other programs) or split the file");
  } catch (const std::exception& e) {
    throw Error(ErrorKind::IO, "'" + file + "': " + doing + " failed (" + e.what() +
                                   "); the file is corrupt or truncated: write it again");
  }
}

}  // namespace surfgrad::io
