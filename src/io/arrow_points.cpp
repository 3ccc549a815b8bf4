// Points from a table (Parquet, Arrow IPC) on the host: batches of rows converted to f32 into a
// small stage, checked row by row (nulls, ragged lists, NaN), handed on in runs that never
// straddle a GPU block (arrow_point_blocks.cpp uploads them; the fuzz target checks them).
#include <arrow/api.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "io/arrow_table.hpp"
#include "io/host_formats.hpp"
#include "io/input_limits.hpp"
#include "io/table_io.hpp"
#include "platform/parallel.hpp"
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
  // Values read with memcpy: an Arrow IPC body need not align its buffers to their type (the fuzz
  // target found an f16 column at an odd address: a misaligned load is undefined behaviour).
  auto at = [&](auto zero, int64_t i) {
    decltype(zero) v;
    std::memcpy(&v, raw + (off + i) * int64_t(sizeof v), sizeof v);
    return v;
  };
  auto typed = [&](auto zero) { run([&](int64_t i) { return float(at(zero, i)); }); };
  switch (a.type_id()) {
    case arrow::Type::FLOAT: typed(float()); break;
    case arrow::Type::DOUBLE: run([&](int64_t i) { return narrow_to_float(at(double(), i)); }); break;
    case arrow::Type::HALF_FLOAT: run([&](int64_t i) { return half_to_float(at(uint16_t(), i)); }); break;
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
  // Rows from `first_row` on (a row group's first row where groups are read in parallel).
  BlockFiller(int64_t max_block_bytes, int64_t declared_rows, const TableBlockSink& sink, int64_t first_row = 0,
              int64_t stage_bytes = kStageBytes)
      : max_block_bytes_(max_block_bytes),
        declared_(declared_rows),
        stage_bytes_(stage_bytes),
        sink_(sink),
        done_(first_row) {}

  // Sets the dimensions (once). The buffer grows with the rows that really arrive, up to the
  // stage: a file that declares 10^9 rows and holds 50 costs 50.
  void start(int64_t dims) {
    dims_ = dims;
    block_rows_ = table_block_rows(max_block_bytes_, dims);
    stage_rows_ = std::clamp<int64_t>(stage_bytes_ / (dims * 4), 1, block_rows_);
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
  int64_t max_block_bytes_, declared_, stage_bytes_;
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
    if (values.type_id() == arrow::Type::FLOAT)  // by bytes: no float* formed at an address Arrow did not check
      std::memcpy(dst, static_cast<const arrow::FloatArray&>(values).values()->data() + (values.offset() + first) * 4,
                  size_t(got * d) * 4);
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

// A Parquet file of several row groups on all cores: worker w converts row groups w, w + W, …
// (a reader each) into runs of its own stage, and this thread hands the runs to the sink as they
// come, in any order, each with its first row (from the groups' row counts, checked). At most
// 2W runs of kParallelStageBytes wait, so memory stays bounded however large the file; a
// failure reports the first bad row group's error, as a serial read would.
constexpr int64_t kParallelStageBytes = int64_t(4) << 20;

struct Run {
  std::vector<float> rows;
  int64_t first = 0, n = 0, d = 0;
};

struct Stopped {};  // a worker told to stop while waiting for room

int64_t read_groups_in_parallel(ArrowTable& table, const std::vector<int>& fields, bool list, const std::string& name,
                                const std::string& names, int64_t batch_rows, int64_t max_block_bytes, int64_t& dims,
                                const TableBlockSink& sink) {
  const std::string& path = table.path();
  const int groups = table.row_groups();
  std::vector<int64_t> group_first(size_t(groups) + 1, 0);
  for (int g = 0; g < groups; ++g) {
    int64_t rows = table.row_group_rows(g);
    if (rows < 0 || rows > table.declared_rows())
      throw file_error(path, "row group " + std::to_string(g) + " declares " + std::to_string(rows) +
                                 " rows; the file is corrupt: write it again");
    group_first[size_t(g) + 1] = group_first[size_t(g)] + rows;
  }
  if (group_first.back() != table.declared_rows())
    throw file_error(path, "its row groups declare " + std::to_string(group_first.back()) + " rows, its metadata " +
                               std::to_string(table.declared_rows()) + "; the file is corrupt: write it again");
  const int workers = std::min(groups, platform::host_threads());
  std::vector<ArrowTable::GroupBatches> readers;
  for (int w = 0; w < workers; ++w) readers.push_back(table.group_batches(fields, batch_rows));

  std::mutex m;
  std::condition_variable cv;
  std::deque<Run> queue;
  bool stop = false;
  int live = workers, failed_group = groups;
  std::exception_ptr failed;
  auto work = [&](int w) {
    TableBlockSink push = [&](const float* rows, int64_t first, int64_t n, int64_t d, int64_t) {
      Run run{std::vector<float>(rows, rows + n * d), first, n, d};
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return stop || queue.size() < size_t(2 * workers); });
      if (stop) throw Stopped{};
      queue.push_back(std::move(run));
      cv.notify_all();
    };
    for (int g = w; g < groups; g += workers) {
      {
        std::lock_guard lock(m);
        if (stop || g > failed_group) break;
      }
      try {
        arrow_guard(path, "reading column " + names, [&] {
          BlockFiller fill(max_block_bytes, table.declared_rows(), push, group_first[size_t(g)], kParallelStageBytes);
          auto reader = readers[size_t(w)](g);
          for (;;) {
            std::shared_ptr<arrow::RecordBatch> batch;
            check_arrow(reader->ReadNext(&batch), path, "reading column '" + names + "'");
            if (!batch) break;
            if (list)
              take_list(*batch->column(0), fill, path, name);
            else
              take_columns(*batch, fill, path);
          }
          fill.flush();
          int64_t want = group_first[size_t(g) + 1] - group_first[size_t(g)],
                  got = fill.rows() - group_first[size_t(g)];
          if (got != want)
            throw file_error(path, "row group " + std::to_string(g) + " holds " + std::to_string(got) + " rows of '" +
                                       names + "', its metadata declares " + std::to_string(want) +
                                       "; the file is corrupt: write it again");
        });
      } catch (const Stopped&) {
        break;
      } catch (...) {
        std::lock_guard lock(m);
        if (g < failed_group) failed_group = g, failed = std::current_exception();
      }
    }
    std::lock_guard lock(m);
    --live;
    cv.notify_all();
  };
  std::vector<std::thread> threads;
  struct Join {  // on every way out: stop the workers and wait for them
    std::vector<std::thread>& t;
    std::mutex& m;
    std::condition_variable& cv;
    bool& stop;
    ~Join() {
      {
        std::lock_guard lock(m);
        stop = true;
      }
      cv.notify_all();
      for (auto& x : t) x.join();
    }
  } join{threads, m, cv, stop};
  for (int w = 0; w < workers; ++w) threads.emplace_back(work, w);

  int64_t rows = 0, d = 0;
  for (;;) {
    Run run;
    {
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return !queue.empty() || live == 0; });
      if (queue.empty()) break;
      run = std::move(queue.front());
      queue.pop_front();
      cv.notify_all();
    }
    if (d == 0) d = run.d;
    if (run.d != d)
      throw row_error(path, name, run.first,
                      "has " + std::to_string(run.d) + " values, other rows " + std::to_string(d) +
                          " (every point the same length; ragged lists cannot be mapped)");
    sink(run.rows.data(), run.first, run.n, run.d, table.declared_rows());
    rows += run.n;
  }
  if (failed) std::rethrow_exception(failed);
  dims = d;
  return rows;
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

  if (table.row_groups() > 1 && platform::host_threads() > 1) {
    int64_t rows =
        read_groups_in_parallel(table, fields, list, first.name, names, batch_rows, max_block_bytes, dims, block);
    if (rows == 0) throw file_error(path, "no points in the file (column '" + names + "' has no rows)");
    return rows;
  }
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
