// `surfgrad map`'s tables through src/io/table_io.hpp, or, built without Arrow, errors saying how
// to get it.
#include "map_tables.hpp"

#include <algorithm>

#include "surfgrad/error.hpp"
#include "surfgrad/io.hpp"
#if SURFGRAD_HAS_ARROW
#include "io/table_columns.hpp"
#include "io/table_io.hpp"
#endif

namespace surfgrad::cli {

namespace {

bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

[[maybe_unused]] Error no_arrow(const std::string& what) {
  return Error(ErrorKind::Value, what +
                                     " needs Parquet / Arrow support, and this surfgrad was built without it "
                                     "(SURFGRAD_ARROW off): run scripts/setup.sh (it installs Arrow C++) and "
                                     "rebuild (scripts/build.sh)");
}

}  // namespace

std::vector<std::string> split_column_names(const std::string& text) {
  std::vector<std::string> names;
  size_t start = 0;
  for (size_t comma; (comma = text.find(',', start)) != std::string::npos; start = comma + 1)
    names.push_back(text.substr(start, comma - start));
  names.push_back(text.substr(start));
  return names;
}

bool writes_parquet(const std::string& out) { return ends_with(out, ".parquet"); }

#if SURFGRAD_HAS_ARROW

void check_table_options(const std::string& input, const std::vector<std::string>& columns,
                         const std::vector<std::string>& keep, bool parquet_out) {
  if (!columns.empty() && (input.empty() || !io::is_table_file(input)))
    throw Error(ErrorKind::Value,
                "--column chooses columns of a Parquet or Arrow (.arrow, .feather) input; " +
                    (input.empty() ? std::string("there is no INPUT") : "'" + input + "' is not one") +
                    ": leave --column out");
  if (!keep.empty() && !parquet_out)
    throw Error(ErrorKind::Value,
                "--keep carries input columns into a Parquet map: name the output NAME.parquet "
                "(-o map.parquet)");
  io::check_kept_columns(input, keep);
}

PointBlocks load_input_points(const gpu::ContextPtr& ctx, const std::string& input,
                              const std::vector<std::string>& columns) {
  if (io::is_table_file(input)) return io::load_table_point_blocks(ctx, input, columns);
  return load_point_blocks(ctx, input);
}

void write_parquet_map(const std::string& path, const Tensor& embedding, const std::string& input,
                       const std::vector<std::string>& keep, const std::string& labels_column) {
  std::vector<float> xy = embedding.to_vector<float>();
  io::write_map_parquet(path, xy.data(), embedding.shape(0), input, keep, labels_column);
}

void check_labels_column_option(const std::string& input, const std::string& column) {
  io::check_labels_column(input, column);
}

Tensor load_table_labels(const gpu::ContextPtr& ctx, const std::string& input, const std::string& column, int64_t n,
                         std::vector<std::string>* names) {
  return Tensor::from_vector(ctx, io::read_table_labels(input, column, n, names), {n});
}

bool is_table(const std::string& path) { return io::is_table_file(path); }

void check_tiles_option(const std::string& dir, bool force) { io::check_tiles_dir(dir, force); }

int64_t write_map_tiles(const std::string& dir, const Tensor& embedding, const Tensor& labels, bool force,
                        int64_t max_rows, const std::vector<std::string>& label_names) {
  std::vector<float> xy = embedding.to_vector<float>();
  std::vector<int32_t> lab;
  if (labels.defined()) lab = labels.to_vector<int32_t>();
  return io::write_map_tiles(dir, xy.data(), embedding.shape(0), lab.empty() ? nullptr : lab.data(), force, max_rows,
                             label_names);
}

Tensor load_map_table(const gpu::ContextPtr& ctx, const std::string& path) {
  std::vector<float> xy;
  int64_t dims = 0;
  int64_t n = io::read_table_points(path, {io::kMapX, io::kMapY}, int64_t(1) << 40, dims,
                                    [&](const float* rows, int64_t first, int64_t k, int64_t d, int64_t) {
                                      // In place by row: a file's row groups may come in any order.
                                      if (xy.size() < size_t((first + k) * d)) xy.resize(size_t((first + k) * d));
                                      std::copy(rows, rows + k * d, xy.begin() + first * d);
                                    });
  return Tensor::from_vector(ctx, xy, {n, 2});
}

#else

void check_table_options(const std::string&, const std::vector<std::string>& columns,
                         const std::vector<std::string>& keep, bool parquet_out) {
  if (!columns.empty()) throw no_arrow("--column");
  if (!keep.empty()) throw no_arrow("--keep");
  if (parquet_out) throw no_arrow("a Parquet output (-o NAME.parquet)");
}

PointBlocks load_input_points(const gpu::ContextPtr& ctx, const std::string& input, const std::vector<std::string>&) {
  return load_point_blocks(ctx, input);
}

void write_parquet_map(const std::string&, const Tensor&, const std::string&, const std::vector<std::string>&,
                       const std::string&) {
  throw no_arrow("a Parquet output (-o NAME.parquet)");
}

void check_labels_column_option(const std::string&, const std::string&) { throw no_arrow("--labels-column"); }

Tensor load_table_labels(const gpu::ContextPtr&, const std::string&, const std::string&, int64_t,
                         std::vector<std::string>*) {
  throw no_arrow("--labels-column");
}

bool is_table(const std::string&) { return false; }

void check_tiles_option(const std::string&, bool) { throw no_arrow("--tiles"); }

int64_t write_map_tiles(const std::string&, const Tensor&, const Tensor&, bool, int64_t,
                        const std::vector<std::string>&) {
  throw no_arrow("--tiles");
}

Tensor load_map_table(const gpu::ContextPtr&, const std::string&) { throw no_arrow("a Parquet map"); }

#endif

}  // namespace surfgrad::cli
