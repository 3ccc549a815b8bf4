// See arrow_parallel_batches.hpp. A Parquet column chunk decodes on one thread, so the cores are
// used across row groups: worker w reads row groups w, w + W, w + 2W … through its own reader
// and the consumer takes row group g's batches from worker g mod W, in order. Each worker's
// queue is bounded, so a slow consumer (the GPU upload) stops the workers instead of the file
// piling up in memory.
#include "io/arrow_parallel_batches.hpp"

#include <parquet/arrow/reader.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

namespace surfgrad::io {

namespace {

constexpr size_t kDepth = 2;  // batches a worker may have decoded ahead of the consumer

// One worker's output: batches, a null batch at the end of each row group, or an error.
struct Item {
  std::shared_ptr<arrow::RecordBatch> batch;  // null: the row group ended
  arrow::Status status;
  std::exception_ptr error;
};

class Queue {
 public:
  // Returns false when the reader is being destroyed (the worker stops).
  bool push(Item item, const bool& stop, std::mutex& m, std::condition_variable& cv) {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return stop || items_.size() < kDepth; });
    if (stop) return false;
    items_.push_back(std::move(item));
    cv.notify_all();
    return true;
  }
  Item pop(std::mutex& m, std::condition_variable& cv) {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return !items_.empty(); });
    Item item = std::move(items_.front());
    items_.pop_front();
    cv.notify_all();
    return item;
  }

 private:
  std::deque<Item> items_;
};

class ParallelBatches : public arrow::RecordBatchReader {
 public:
  ParallelBatches(const ParquetReaderFactory& open, std::shared_ptr<arrow::Schema> schema, std::vector<int> groups,
                  std::vector<int> columns, int64_t batch_rows, int workers)
      : schema_(std::move(schema)), groups_(std::move(groups)), queues_(size_t(workers)) {
    // Readers are opened here, on the calling thread, so an error opening one is thrown here.
    for (int w = 0; w < workers; ++w) {
      std::shared_ptr<parquet::arrow::FileReader> reader = open();
      reader->set_batch_size(batch_rows);
      threads_.emplace_back([this, w, workers, reader, columns] { work(w, workers, *reader, columns); });
    }
  }
  ~ParallelBatches() override {
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }

  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
    for (;;) {
      if (at_ >= groups_.size() || failed_) {
        *batch = nullptr;
        return arrow::Status::OK();
      }
      Item item = queues_[at_ % queues_.size()].pop(m_, cv_);
      if (item.error || !item.status.ok()) failed_ = true;
      if (item.error) std::rethrow_exception(item.error);
      ARROW_RETURN_NOT_OK(item.status);
      if (item.batch) {
        *batch = std::move(item.batch);
        return arrow::Status::OK();
      }
      ++at_;  // this row group ended: the next one is the next worker's
    }
  }

 private:
  void work(int w, int workers, parquet::arrow::FileReader& reader, const std::vector<int>& columns) {
    Queue& q = queues_[size_t(w)];
    for (size_t g = size_t(w); g < groups_.size(); g += size_t(workers)) {
      Item end;
      try {
        std::unique_ptr<arrow::RecordBatchReader> batches;
        end.status = reader.GetRecordBatchReader({groups_[g]}, columns).Value(&batches);
        while (end.status.ok()) {
          std::shared_ptr<arrow::RecordBatch> b;
          end.status = batches->ReadNext(&b);
          if (!end.status.ok() || !b) break;
          if (!q.push(Item{std::move(b), {}, {}}, stop_, m_, cv_)) return;
        }
      } catch (...) {
        end.error = std::current_exception();
      }
      bool failed = end.error || !end.status.ok();
      if (!q.push(std::move(end), stop_, m_, cv_) || failed) return;
    }
  }

  std::shared_ptr<arrow::Schema> schema_;
  std::vector<int> groups_;
  std::vector<Queue> queues_;
  std::vector<std::thread> threads_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false, failed_ = false;
  size_t at_ = 0;  // the row group being handed out
};

}  // namespace

std::shared_ptr<arrow::RecordBatchReader> parallel_parquet_batches(const ParquetReaderFactory& open,
                                                                   std::shared_ptr<arrow::Schema> schema,
                                                                   std::vector<int> row_groups,
                                                                   std::vector<int> columns, int64_t batch_rows,
                                                                   int workers) {
  workers = std::max(1, std::min(workers, int(row_groups.size())));
  return std::make_shared<ParallelBatches>(open, std::move(schema), std::move(row_groups), std::move(columns),
                                           batch_rows, workers);
}

}  // namespace surfgrad::io
