// Private to src/io and the CLI: points read from, and maps written to, tables (Parquet, Arrow
// IPC / Feather v2) through Apache Arrow C++. Built only where scripts/setup.sh found Arrow
// (CMake option SURFGRAD_ARROW; SURFGRAD_HAS_ARROW is then defined for the CLI), never in the
// browser. Nothing here includes Arrow's headers: callers see std types only.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "surfgrad/point_blocks.hpp"

namespace surfgrad::io {

// Whether `path` is a table: a Parquet or Arrow IPC file by its first bytes, else by its name
// (.parquet, .arrow, .feather, .arrows, .ipc).
bool is_table_file(const std::string& path);
// Whether an output named `path` is to be written as Parquet (it ends in .parquet).
bool is_parquet_output(const std::string& path);

// The points of a table: `columns` as in choose_point_columns (table_columns.hpp). The file is
// read in batches of rows, each converted to f32 into a staging buffer of a few MiB and uploaded
// into its place in a GPU block (at most `max_block_bytes`; 0: a quarter of the adapter's binding
// limit), so the host never holds a copy of the points beyond Arrow's batch and that stage. Nulls, ragged lists, NaN
// and infinity are refused naming the file, the column and the row.
PointBlocks load_table_point_blocks(const gpu::ContextPtr& ctx, const std::string& path,
                                    const std::vector<std::string>& columns, uint64_t max_block_bytes = 0);

// The host half of load_table_point_blocks (tests and fuzzing): `block` receives each run of
// whole rows as f32 (n × dims, C order) with its first row number and the rows the file declares
// (-1: none). Runs are at most 16 MiB and never straddle a block of
// table_block_rows(max_block_bytes, dims) rows. They come in file order, except from a Parquet
// file of several row groups, whose groups are decoded on all cores and handed on as they
// finish (each run's rows in place by its first row; every row exactly once). Returns the number of rows and sets
// `dims`.
using TableBlockSink =
    std::function<void(const float* rows, int64_t first_row, int64_t n, int64_t dims, int64_t declared_rows)>;
int64_t read_table_points(const std::string& path, const std::vector<std::string>& columns, int64_t max_block_bytes,
                          int64_t& dims, const TableBlockSink& block);
// Rows of a block of points of `dims` in `max_block_bytes`.
int64_t table_block_rows(int64_t max_block_bytes, int64_t dims);

// Checks, before any work, that `input` is a table with a column `column` (--labels-column).
void check_labels_column(const std::string& input, const std::string& column);
// One label per row (n rows) from the column `column` of the table `path`: integers ≥ 0 as they
// are, whole floats, or strings (plain or dictionary) numbered 0, 1, … by first appearance.
// Nulls, negative or fractional numbers, other types and a row count other than n are errors
// naming the file, the column and the row.
// `names`, where given, receives the strings by class number (empty for a numeric column).
std::vector<int32_t> read_table_labels(const std::string& path, const std::string& column, int64_t n,
                                       std::vector<std::string>* names = nullptr);

// Checks, before any work, that `input` (a table) has the columns `keep` names; throws naming
// the file and the column. (A non-table input with --keep is refused too.)
void check_kept_columns(const std::string& input, const std::vector<std::string>& keep);

// Writes the map `xy` (n × 2 f32, C order) to `out` as Parquet: columns x, y (float32), then the
// input table's columns `keep`, carried through batch by batch (or `id`, the row number, where
// keep is empty), in row groups. `input` must have n rows.
// `labels_column` (--labels-column), where not kept, is carried too, as `label`.
void write_map_parquet(const std::string& out, const float* xy, int64_t n, const std::string& input,
                       const std::vector<std::string>& keep, const std::string& labels_column = "");

// --tiles DIR, before any work: refuses "", "-", a file, a non-empty folder without `force`, and
// a folder whose parent does not exist; each naming DIR and the fix.
void check_tiles_dir(const std::string& dir, bool force);
// Writes the map `xy` (n × 2 f32) as a quadtree of Arrow IPC tiles of at most `max_rows` rows
// (x, y, ix: the row number, and label where `labels` is given) and a manifest.json into `dir`
// (docs/tiles.md), staged beside it and renamed into place. Returns the number of tiles.
// `label_names` (the class names of a string labels column) go into the manifest.
int64_t write_map_tiles(const std::string& dir, const float* xy, int64_t n, const int32_t* labels, bool force,
                        int64_t max_rows = 65536, const std::vector<std::string>& label_names = {});

}  // namespace surfgrad::io
