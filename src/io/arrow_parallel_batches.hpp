// Private to src/io: a Parquet file's record batches decoded on several threads, row group by
// row group, and handed out in file order with bounded memory (arrow_parallel_batches.cpp).
#pragma once
#include <arrow/api.h>

#include <functional>
#include <memory>
#include <vector>

namespace parquet::arrow {
class FileReader;
}

namespace surfgrad::io {

// Opens one more reader of the same file (each worker decodes through its own).
using ParquetReaderFactory = std::function<std::unique_ptr<parquet::arrow::FileReader>()>;

// Batches of `columns` (Parquet leaf columns) of `row_groups` row groups, `batch_rows` rows a
// batch. `workers` threads (at most one per row group) each take every workers-th row group and
// decode its batches into a queue of at most kDepth waiting batches, so at most about
// workers × (kDepth + 1) batches are in memory, however large the file. ReadNext returns them
// in file order; a worker's error comes back from ReadNext (as a Status or the exception it threw).
std::shared_ptr<arrow::RecordBatchReader> parallel_parquet_batches(const ParquetReaderFactory& open,
                                                                   std::shared_ptr<arrow::Schema> schema,
                                                                   std::vector<int> row_groups,
                                                                   std::vector<int> columns, int64_t batch_rows,
                                                                   int workers);

}  // namespace surfgrad::io
