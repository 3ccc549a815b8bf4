// `surfgrad map`'s tables: points from Parquet / Arrow IPC (--column), the map to Parquet (-o
// NAME.parquet, --keep). Where the program was built without Arrow (SURFGRAD_ARROW off) these
// say so and how to get it, instead of the options vanishing.
#pragma once
#include <string>
#include <vector>

#include "surfgrad/point_blocks.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad::cli {

// "a,b,c" → {a, b, c} (--column, --keep); empty names are kept, for the reader to name.
std::vector<std::string> split_column_names(const std::string& text);
// Whether -o `out` asks for Parquet (it ends in .parquet).
bool writes_parquet(const std::string& out);
// Checks, before any work, that --column / --keep fit the input and the output: a table input
// for them, the kept columns present, --keep only with a Parquet output. Usage errors, named.
void check_table_options(const std::string& input, const std::vector<std::string>& columns,
                         const std::vector<std::string>& keep, bool parquet_out);
// The points of `input`: a table's `columns`, or any other format surfgrad reads.
PointBlocks load_input_points(const gpu::ContextPtr& ctx, const std::string& input,
                              const std::vector<std::string>& columns);
// The map as Parquet at `path`: x, y and the input's `keep` columns (or id), and the labels
// column (--labels-column) as `label` where not kept.
void write_parquet_map(const std::string& path, const Tensor& embedding, const std::string& input,
                       const std::vector<std::string>& keep, const std::string& labels_column = "");
// --labels-column: checks before any work that `input` is a table with `column`; then its labels
// (one i32 per point, n points; strings numbered by first appearance).
void check_labels_column_option(const std::string& input, const std::string& column);
// `names` receives a string column's class names by number (empty for numbers).
Tensor load_table_labels(const gpu::ContextPtr& ctx, const std::string& input, const std::string& column, int64_t n,
                         std::vector<std::string>* names = nullptr);
// --tiles DIR: checked before any work (a new or empty folder, or --force), then written (tiles
// of x, y, ix and the labels where given; docs/tiles.md). Returns the number of tiles.
void check_tiles_option(const std::string& dir, bool force);
int64_t write_map_tiles(const std::string& dir, const Tensor& embedding, const Tensor& labels, bool force,
                        int64_t max_rows, const std::vector<std::string>& label_names = {});
// Whether `path` is a table (Parquet / Arrow IPC); false where built without Arrow.
bool is_table(const std::string& path);
// A map written as a table (eval's EMBEDDING): its columns x, y as an n × 2 tensor.
Tensor load_map_table(const gpu::ContextPtr& ctx, const std::string& path);

}  // namespace surfgrad::cli
