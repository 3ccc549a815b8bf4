// A Parquet or Arrow IPC file through Apache Arrow C++ (arrow_table.hpp).
#include "io/arrow_table.hpp"

#include <arrow/io/api.h>
#include <arrow/ipc/api.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/file_reader.h>

#include <cstring>
#include <functional>

#include "io/arrow_parallel_batches.hpp"
#include "platform/parallel.hpp"

namespace surfgrad::io {

namespace {

bool is_float(const arrow::DataType& t) {
  return t.id() == arrow::Type::HALF_FLOAT || t.id() == arrow::Type::FLOAT || t.id() == arrow::Type::DOUBLE;
}

ColumnKind kind_of(const arrow::DataType& t) {
  if (t.id() == arrow::Type::LIST || t.id() == arrow::Type::LARGE_LIST || t.id() == arrow::Type::FIXED_SIZE_LIST) {
    const auto& value = *static_cast<const arrow::BaseListType&>(t).value_type();
    return is_float(value) ? ColumnKind::FloatList : ColumnKind::OtherList;
  }
  if (is_float(t)) return ColumnKind::Float;
  if (arrow::is_integer(t.id())) return ColumnKind::Integer;
  return ColumnKind::Other;
}

// The Parquet leaf columns under a top-level field (a list column is one leaf, a struct several).
void leaves(const parquet::arrow::SchemaField& f, std::vector<int>& out) {
  if (f.column_index >= 0) out.push_back(f.column_index);
  for (const auto& c : f.children) leaves(c, out);
}

// IPC reads that copy any buffer not aligned to its type: an IPC body need not align them (the
// fuzz target found floats at an odd address), and Arrow's own accessors (offsets, Value(i),
// dictionary indices) load them typed, which is undefined behaviour when misaligned. A file a
// writer aligned, as every Arrow writer does, is not copied.
arrow::ipc::IpcReadOptions aligned_reads() {
  auto o = arrow::ipc::IpcReadOptions::Defaults();
  o.ensure_alignment = arrow::ipc::Alignment::kDataTypeSpecificAlignment;
  return o;
}

// The chosen columns of batches from `next` (an IPC file's or stream's batches), validated.
class SelectedBatches : public arrow::RecordBatchReader {
 public:
  using Next = std::function<arrow::Status(std::shared_ptr<arrow::RecordBatch>*)>;
  SelectedBatches(Next next, std::vector<int> fields, std::shared_ptr<arrow::Schema> schema)
      : next_(std::move(next)), fields_(std::move(fields)), schema_(std::move(schema)) {}
  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }
  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
    std::shared_ptr<arrow::RecordBatch> all;
    ARROW_RETURN_NOT_OK(next_(&all));
    if (!all) {
      *batch = nullptr;
      return arrow::Status::OK();
    }
    ARROW_ASSIGN_OR_RAISE(*batch, all->SelectColumns(fields_));
    // IPC buffers are the file's bytes, mapped as they are: offsets and lengths are checked
    // against the buffers before anything reads through them (Arrow does not on read).
    return (*batch)->ValidateFull();
  }

 private:
  Next next_;
  std::vector<int> fields_;
  std::shared_ptr<arrow::Schema> schema_;
};

// A Parquet reader of `file`; its columns decode on Arrow's thread pool where there are several.
std::unique_ptr<parquet::arrow::FileReader> open_parquet(const std::shared_ptr<arrow::io::RandomAccessFile>& file,
                                                         const std::string& path) {
  parquet::ArrowReaderProperties props;
  props.set_use_threads(true);
  parquet::arrow::FileReaderBuilder builder;
  check_arrow(builder.Open(file), path, "this is a Parquet file by its magic bytes, but reading its footer");
  builder.properties(props);
  return check_arrow(builder.Build(), path, "this is a Parquet file by its magic bytes, but reading its schema");
}

}  // namespace

void check_arrow(const arrow::Status& status, const std::string& file, const std::string& doing) {
  if (status.ok()) return;
  if (status.IsOutOfMemory())
    throw Error(ErrorKind::OutOfMemory, "'" + file + "': the host ran out of memory while " + doing + " (" +
                                            status.message() + "); free memory or split the file");
  throw Error(ErrorKind::IO, "'" + file + "': " + doing + " failed (" + status.message() +
                                 "); the file is corrupt, truncated or not what its name says: write it again");
}

ArrowTable::ArrowTable(std::string path) : path_(std::move(path)) {
  arrow_guard(path_, "opening it", [&] {
    auto opened = arrow::io::MemoryMappedFile::Open(path_, arrow::io::FileMode::READ);
    if (!opened.ok())
      throw Error(ErrorKind::IO, "'" + path_ + "': cannot open for reading (" + opened.status().message() + ")");
    file_ = *opened;
    int64_t size = check_arrow(file_->GetSize(), path_, "reading its size");
    char magic[6] = {};
    if (size >= 4) check_arrow(file_->ReadAt(0, std::min<int64_t>(size, 6), magic), path_, "reading its first bytes");
    parquet_ = size >= 4 && std::memcmp(magic, "PAR1", 4) == 0;
    if (parquet_) {
      parquet_reader_ = open_parquet(file_, path_);
      check_arrow(parquet_reader_->GetSchema(&schema_), path_,
                  "this is a Parquet file by its magic bytes, but reading its schema");
      declared_rows_ = parquet_reader_->parquet_reader()->metadata()->num_rows();
    } else if (size >= 6 && std::memcmp(magic, "ARROW1", 6) == 0) {
      auto r = check_arrow(arrow::ipc::RecordBatchFileReader::Open(file_, aligned_reads()), path_,
                           "reading its Arrow IPC footer");
      schema_ = r->schema();
      declared_rows_ = check_arrow(r->CountRows(), path_, "counting its Arrow IPC rows");
      ipc_file_ = true;
    } else {
      // An IPC stream (no footer), or not Arrow at all: its schema message says which.
      auto r = arrow::ipc::RecordBatchStreamReader::Open(file_, aligned_reads());
      if (!r.ok())
        throw Error(ErrorKind::IO, "'" + path_ +
                                       "': neither a Parquet file (no PAR1 magic) nor Arrow IPC / Feather v2 (" +
                                       r.status().message() + "); write it with pyarrow (pq.write_table, " +
                                       "pyarrow.feather.write_feather) or another Arrow writer");
      schema_ = (*r)->schema();
      check_arrow(file_->Seek(0), path_, "rewinding it");
    }
    for (const auto& f : schema_->fields()) columns_.push_back({f->name(), kind_of(*f->type()), f->type()->ToString()});
  });
}

ArrowTable::~ArrowTable() = default;

std::shared_ptr<arrow::RecordBatchReader> ArrowTable::batches(const std::vector<int>& fields, int64_t batch_rows) {
  return arrow_guard(path_, "reading its batches", [&]() -> std::shared_ptr<arrow::RecordBatchReader> {
    if (parquet_) {
      std::vector<int> cols;
      for (int f : fields) leaves(parquet_reader_->manifest().schema_fields[size_t(f)], cols);
      std::vector<int> groups(size_t(parquet_reader_->num_row_groups()));
      for (size_t g = 0; g < groups.size(); ++g) groups[g] = int(g);
      batch_rows = std::max<int64_t>(1, batch_rows);
      if (groups.size() > 1 && platform::host_threads() > 1) {
        arrow::FieldVector picked;
        for (int f : fields) picked.push_back(schema_->field(f));
        return parallel_parquet_batches([this] { return open_parquet(file_, path_); }, arrow::schema(picked), groups,
                                        cols, batch_rows, platform::host_threads());
      }
      parquet_reader_->set_batch_size(batch_rows);
      return check_arrow(parquet_reader_->GetRecordBatchReader(groups, cols), path_, "reading its row groups");
    }
    arrow::FieldVector chosen;
    for (int f : fields) chosen.push_back(schema_->field(f));
    auto schema = arrow::schema(chosen);
    check_arrow(file_->Seek(0), path_, "rewinding it");
    if (ipc_file_) {
      auto r = check_arrow(arrow::ipc::RecordBatchFileReader::Open(file_, aligned_reads()), path_,
                           "reading its Arrow IPC footer");
      auto next = [r, i = 0](std::shared_ptr<arrow::RecordBatch>* b) mutable -> arrow::Status {
        if (i >= r->num_record_batches()) {
          *b = nullptr;
          return arrow::Status::OK();
        }
        ARROW_ASSIGN_OR_RAISE(*b, r->ReadRecordBatch(i++));
        return arrow::Status::OK();
      };
      return std::make_shared<SelectedBatches>(next, fields, schema);
    }
    std::shared_ptr<arrow::RecordBatchReader> r = check_arrow(
        arrow::ipc::RecordBatchStreamReader::Open(file_, aligned_reads()), path_, "reading its Arrow IPC stream");
    return std::make_shared<SelectedBatches>([r](std::shared_ptr<arrow::RecordBatch>* b) { return r->ReadNext(b); },
                                             fields, schema);
  });
}

int ArrowTable::row_groups() const { return parquet_ ? parquet_reader_->num_row_groups() : 0; }

int64_t ArrowTable::row_group_rows(int group) const {
  return parquet_reader_->parquet_reader()->metadata()->RowGroup(group)->num_rows();
}

ArrowTable::GroupBatches ArrowTable::group_batches(const std::vector<int>& fields, int64_t batch_rows) {
  return arrow_guard(path_, "opening a reader", [&]() -> GroupBatches {
    std::shared_ptr<parquet::arrow::FileReader> reader = open_parquet(file_, path_);
    reader->set_batch_size(std::max<int64_t>(1, batch_rows));
    std::vector<int> cols;
    for (int f : fields) leaves(reader->manifest().schema_fields[size_t(f)], cols);
    return [reader, cols, path = path_](int group) -> std::shared_ptr<arrow::RecordBatchReader> {
      return check_arrow(reader->GetRecordBatchReader({group}, cols), path,
                         "reading row group " + std::to_string(group));
    };
  });
}

}  // namespace surfgrad::io
