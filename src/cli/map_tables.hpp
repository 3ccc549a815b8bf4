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
// The map as Parquet at `path`: x, y and the input's `keep` columns (or id).
void write_parquet_map(const std::string& path, const Tensor& embedding, const std::string& input,
                       const std::vector<std::string>& keep);

}  // namespace surfgrad::cli
