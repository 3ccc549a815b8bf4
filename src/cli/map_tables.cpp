// `surfgrad map`'s tables through src/io/table_io.hpp, or, built without Arrow, errors saying how
// to get it.
#include "map_tables.hpp"

#include "surfgrad/error.hpp"
#include "surfgrad/io.hpp"
#if SURFGRAD_HAS_ARROW
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
                       const std::vector<std::string>& keep) {
  std::vector<float> xy = embedding.to_vector<float>();
  io::write_map_parquet(path, xy.data(), embedding.shape(0), input, keep);
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

void write_parquet_map(const std::string&, const Tensor&, const std::string&, const std::vector<std::string>&) {
  throw no_arrow("a Parquet output (-o NAME.parquet)");
}

#endif

}  // namespace surfgrad::cli
