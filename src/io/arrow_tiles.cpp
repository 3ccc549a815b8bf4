// A map written as tiles (--tiles DIR): the quadtree of quadtree_tiles.cpp, each tile one Arrow
// IPC file (Feather v2) of one record batch, DIR/z/x/y.feather, and DIR/manifest.json
// (docs/tiles.md). Everything is written into a hidden folder beside DIR and renamed into place,
// so a failed run leaves no half-written folder, and an existing DIR is replaced only with --force.
#include <arrow/api.h>
#include <arrow/io/api.h>
#include <arrow/ipc/api.h>
#include <arrow/util/key_value_metadata.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>

#include "io/arrow_table.hpp"
#include "io/quadtree_tiles.hpp"
#include "io/table_io.hpp"
#include "io/write_file.hpp"
#include "platform/parallel.hpp"

namespace surfgrad::io {

namespace fs = std::filesystem;

namespace {

Error tiles_error(const std::string& dir, const std::string& what) {
  return Error(ErrorKind::IO, "--tiles '" + dir + "': " + what);
}

std::string children_json(const QuadTree& tree, const Tile& t) {
  nlohmann::json keys = nlohmann::json::array();
  for (int c : t.children) keys.push_back(tree.tiles[size_t(c)].key());
  return keys.dump();
}

// One tile's rows as a record batch: x, y, ix, [label].
std::shared_ptr<arrow::RecordBatch> tile_batch(const std::shared_ptr<arrow::Schema>& schema, const QuadTree& tree,
                                               const Tile& t, const int32_t* labels, const std::string& dir) {
  const int64_t rows = t.end - t.begin;
  auto alloc = [&](int64_t bytes) { return check_arrow(arrow::AllocateBuffer(bytes), dir, "allocating a tile"); };
  std::shared_ptr<arrow::Buffer> bx = alloc(rows * 4), by = alloc(rows * 4), bi = alloc(rows * 4), bl;
  float* px = reinterpret_cast<float*>(bx->mutable_data());
  float* py = reinterpret_cast<float*>(by->mutable_data());
  uint32_t* pi = reinterpret_cast<uint32_t*>(bi->mutable_data());
  const float* sorted = tree.xy.data() + 2 * t.begin;
  for (int64_t k = 0; k < rows; ++k)
    px[k] = sorted[2 * k], py[k] = sorted[2 * k + 1], pi[k] = tree.order[size_t(t.begin + k)];
  std::vector<std::shared_ptr<arrow::Array>> cols = {std::make_shared<arrow::FloatArray>(rows, bx),
                                                     std::make_shared<arrow::FloatArray>(rows, by),
                                                     std::make_shared<arrow::UInt32Array>(rows, bi)};
  if (labels) {
    bl = alloc(rows * 4);
    int32_t* pl = reinterpret_cast<int32_t*>(bl->mutable_data());
    for (int64_t k = 0; k < rows; ++k) pl[k] = labels[tree.order[size_t(t.begin + k)]];
    cols.push_back(std::make_shared<arrow::Int32Array>(rows, bl));
  }
  return arrow::RecordBatch::Make(schema, rows, cols);
}

void write_tile(const fs::path& root, const QuadTree& tree, const Tile& t, const std::shared_ptr<arrow::Schema>& base,
                const int32_t* labels, const std::string& dir) {
  fs::path folder = root / std::to_string(t.z) / std::to_string(t.x);
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw tiles_error(dir, "cannot make a folder for tile " + t.key() + " (" + ec.message() + ")");
  // Each tile names its children in its schema's metadata, as quadfeather's tiles do.
  auto schema = base->WithMetadata(arrow::key_value_metadata({"children"}, {children_json(tree, t)}));
  std::string path = (folder / (std::to_string(t.y) + ".feather")).string();
  auto sink = check_arrow(arrow::io::FileOutputStream::Open(path), dir, "opening tile " + t.key());
  auto writer = check_arrow(arrow::ipc::MakeFileWriter(sink, schema), dir, "starting tile " + t.key());
  check_arrow(writer->WriteRecordBatch(*tile_batch(schema, tree, t, labels, dir)), dir, "writing tile " + t.key());
  check_arrow(writer->Close(), dir, "finishing tile " + t.key());
  check_arrow(sink->Close(), dir, "closing tile " + t.key());
}

nlohmann::json manifest(const QuadTree& tree, int64_t n, int64_t max_rows, const arrow::Schema& schema,
                        const std::vector<std::string>& label_names) {
  nlohmann::json m;
  m["format"] = "surfgrad-tiles";
  m["version"] = 1;
  m["points"] = n;
  m["max_rows_per_tile"] = max_rows;
  m["tile_count"] = tree.tiles.size();
  int depth = 0;
  for (const Tile& t : tree.tiles) depth = std::max(depth, t.z);
  m["depth"] = depth;
  m["bounds"] = {tree.bounds.x0, tree.bounds.y0, tree.bounds.x1, tree.bounds.y1};
  m["root"] = tree.tiles[0].key();
  m["tile_path"] = "{z}/{x}/{y}.feather";
  nlohmann::json cols = nlohmann::json::array();
  for (const auto& f : schema.fields()) cols.push_back({{"name", f->name()}, {"type", f->type()->ToString()}});
  m["columns"] = cols;
  if (!label_names.empty()) m["label_names"] = label_names;  // label k is label_names[k]
  nlohmann::json tiles = nlohmann::json::array();
  for (const Tile& t : tree.tiles) {
    nlohmann::json children = nlohmann::json::array();
    for (int c : t.children) children.push_back(tree.tiles[size_t(c)].key());
    tiles.push_back({{"key", t.key()},
                     {"rows", t.end - t.begin},
                     {"bounds", {t.bounds.x0, t.bounds.y0, t.bounds.x1, t.bounds.y1}},
                     {"children", children}});
  }
  m["tiles"] = tiles;
  return m;
}

bool non_empty_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec) && fs::directory_iterator(p, ec) != fs::directory_iterator();
}

}  // namespace

void check_tiles_dir(const std::string& dir, bool force) {
  if (dir.empty() || dir == "-")
    throw Error(ErrorKind::Value, "--tiles needs a folder name (tiles cannot go to standard output)");
  fs::path p(dir);
  std::error_code ec;
  auto st = fs::symlink_status(p, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    throw Error(ErrorKind::Value, "--tiles '" + dir + "' is a file, not a folder; name a new folder");
  if (non_empty_dir(p) && !force)
    throw Error(ErrorKind::Value, "--tiles '" + dir + "' is a folder that is not empty; name a new folder, or add " +
                                      "--force to replace it");
  fs::path parent = fs::absolute(p, ec).parent_path();
  if (!fs::is_directory(parent, ec))
    throw Error(ErrorKind::Value,
                "--tiles '" + dir + "': its parent folder '" + parent.string() + "' does not exist; make it first");
}

int64_t write_map_tiles(const std::string& dir, const float* xy, int64_t n, const int32_t* labels, bool force,
                        int64_t max_rows, const std::vector<std::string>& label_names) {
  check_tiles_dir(dir, force);
  QuadTree tree = build_quadtree(xy, n, max_rows);
  arrow::FieldVector fields = {arrow::field("x", arrow::float32(), false), arrow::field("y", arrow::float32(), false),
                               arrow::field("ix", arrow::uint32(), false)};
  if (labels) fields.push_back(arrow::field(kMapLabel, arrow::int32(), false));
  auto schema = arrow::schema(fields);

  fs::path target = fs::absolute(fs::path(dir));
  if (target.filename().empty()) target = target.parent_path();  // "tiles/" → "tiles"
  const std::string tag = std::to_string(::getpid());
  fs::path staged = target.parent_path() / ("." + target.filename().string() + ".tiles-" + tag);
  fs::path old = target.parent_path() / ("." + target.filename().string() + ".old-" + tag);
  std::error_code ec;
  fs::remove_all(staged, ec);
  if (!fs::create_directory(staged, ec) || ec)
    throw tiles_error(dir, "cannot make the folder '" + staged.string() + "' to write into (" + ec.message() + ")");
  try {
    arrow_guard(dir, "writing tiles", [&] {
      std::mutex m;
      std::string first_error;
      std::atomic<size_t> next{0};
      const int parts = int(std::min<size_t>(tree.tiles.size(), size_t(platform::host_threads())));
      platform::parallel_parts(parts, [&](int) {
        for (size_t t; (t = next++) < tree.tiles.size();) {
          try {
            write_tile(staged, tree, tree.tiles[t], schema, labels, dir);
          } catch (const std::exception& e) {
            std::lock_guard lock(m);
            if (first_error.empty()) first_error = e.what();
            next = tree.tiles.size();
          }
        }
      });
      if (!first_error.empty()) throw Error(ErrorKind::IO, first_error);
      write_whole_file((staged / "manifest.json").string(),
                       manifest(tree, n, max_rows, *schema, label_names).dump(1) + "\n");
    });
    // Into place: an empty DIR goes, a full one (--force) is moved aside and removed after.
    if (fs::is_directory(target, ec)) {
      if (non_empty_dir(target)) {
        if (!force) throw tiles_error(dir, "became a non-empty folder while the map ran; nothing was replaced");
        fs::rename(target, old, ec);
        if (ec) throw tiles_error(dir, "cannot move the old folder aside (" + ec.message() + ")");
      } else {
        fs::remove(target, ec);
      }
    }
    fs::rename(staged, target, ec);
    if (ec) {
      if (fs::exists(old)) fs::rename(old, target);
      throw tiles_error(dir, "cannot rename the finished tiles into place (" + ec.message() + ")");
    }
    fs::remove_all(old, ec);
  } catch (...) {
    fs::remove_all(staged, ec);
    throw;
  }
  return int64_t(tree.tiles.size());
}

}  // namespace surfgrad::io
