// --labels-column's reader (src/io/arrow_labels.cpp), the labels carried into a Parquet map, and
// the quadtree that --tiles writes (src/io/quadtree_tiles.cpp, arrow_tiles.cpp): every row once,
// tiles inside their squares, bounded rows, a root that samples the whole map; bad folders refused.
#if SURFGRAD_HAS_ARROW
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "io/quadtree_tiles.hpp"
#include "io/table_columns.hpp"
#include "io/table_io.hpp"
#include "io_test_util.hpp"
#include "table_test_util.hpp"

namespace {

using surfgrad::ErrorKind;
namespace tt = table_test;
namespace io = surfgrad::io;
namespace fs = std::filesystem;

std::string path_of(const std::string& name) { return sgtest::io_path("labels_" + name); }

std::shared_ptr<arrow::Array> ints(std::vector<int64_t> v, int64_t null_at = -1) {
  arrow::Int64Builder b;
  for (size_t i = 0; i < v.size(); ++i) tt::ok(int64_t(i) == null_at ? b.AppendNull() : b.Append(v[i]));
  return tt::ok(b.Finish());
}

std::string labels_file(const std::string& name, std::shared_ptr<arrow::Array> labels) {
  tt::Points p{.n = labels->length(), .d = 3};
  std::string path = path_of(name);
  tt::write_parquet(tt::table_of({{"embedding", tt::points_array(p)}, {"cls", labels}}), path, 4);
  return path;
}

TEST(TableLabels, IntegersStringsAndDictionariesAreClassNumbers) {
  EXPECT_EQ(io::read_table_labels(labels_file("ints.parquet", ints({3, 0, 7, 3, 1})), "cls", 5),
            (std::vector<int32_t>{3, 0, 7, 3, 1}));
  arrow::StringBuilder s;
  for (const char* v : {"dog", "cat", "dog", "emu", "cat"}) tt::ok(s.Append(v));
  std::vector<std::string> names;
  EXPECT_EQ(io::read_table_labels(labels_file("strings.parquet", tt::ok(s.Finish())), "cls", 5, &names),
            (std::vector<int32_t>{0, 1, 0, 2, 1}));  // by first appearance, across row groups
  EXPECT_EQ(names, (std::vector<std::string>{"dog", "cat", "emu"}));
  arrow::StringDictionaryBuilder d;
  for (const char* v : {"b", "a", "b", "c", "a", "c"}) tt::ok(d.Append(v));
  std::string arrow_path = path_of("dict.arrow");
  tt::write_ipc(tt::table_of({{"cls", tt::ok(d.Finish())}}), arrow_path);
  EXPECT_EQ(io::read_table_labels(arrow_path, "cls", 6), (std::vector<int32_t>{0, 1, 0, 2, 1, 2}));
}

TEST(TableLabels, BadLabelsAreNamed) {
  auto check = [](const std::string& path, const std::string& column, int64_t n, ErrorKind kind,
                  const std::string& needle) {
    sgtest::expect_error(kind, path, needle, [&] { io::read_table_labels(path, column, n); });
  };
  check(labels_file("null.parquet", ints({1, 2, 3, 4, 5, 6}, 5)), "cls", 6, ErrorKind::Value,
        "labels column 'cls', row 5 is null");
  check(labels_file("negative.parquet", ints({1, 2, -3})), "cls", 3, ErrorKind::Value, "row 2 is -3");
  check(labels_file("count.parquet", ints({1, 2, 3})), "cls", 4, ErrorKind::Shape, "one label for each of the 4");
  check(labels_file("missing.parquet", ints({1})), "nope", 1, ErrorKind::Value,
        "no column 'nope' (its columns: embedding, cls); name one of those with --labels-column");
  tt::Points p{.n = 3, .d = 2};
  std::string lists = path_of("lists.parquet");
  tt::write_parquet(tt::table_of({{"embedding", tt::points_array(p)}}), lists);
  check(lists, "embedding", 3, ErrorKind::DType, "labels are integers, whole floats or strings");
}

TEST(TableLabels, CarriedIntoTheParquetMapAsLabel) {
  std::string in = labels_file("carry.parquet", ints({4, 5, 6, 7, 8}));
  std::vector<float> xy(10, 0.5f);
  std::string out = path_of("carry_map.parquet");
  io::write_map_parquet(out, xy.data(), 5, in, {}, "cls");
  auto t = tt::read_parquet(out);
  ASSERT_EQ(t->schema()->ToString(), "x: float not null\ny: float not null\nid: int64 not null\nlabel: int64");
  EXPECT_EQ(t->column(3)->chunk(0)->ToString(), ints({4, 5, 6, 7, 8})->ToString());
  // Kept already: no second copy; a kept column called label and another labels column: refused.
  io::write_map_parquet(out, xy.data(), 5, in, {"cls"}, "cls");
  EXPECT_EQ(tt::read_parquet(out)->num_columns(), 3);
}

// Points in 4 clusters and a pile of identical points, as a map might be.
std::vector<float> map_points(int64_t n) {
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> xy(size_t(2 * n));
  for (int64_t i = 0; i < n; ++i) {
    bool pile = i % 2 == 0;
    xy[size_t(2 * i)] = pile ? 3.f : g(rng) + float(i % 4) * 5;
    xy[size_t(2 * i + 1)] = pile ? -2.f : g(rng) + float(i % 3) * 4;
  }
  return xy;
}

TEST(QuadTree, EveryRowOnceInsideItsSquareWithinItsLimit) {
  const int64_t n = 20000, rows = 500;
  std::vector<float> xy = map_points(n);
  io::QuadTree tree = io::build_quadtree(xy.data(), n, rows, 1, 8);
  std::vector<int> seen(size_t(n), 0);
  int deepest = 0;
  for (const io::Tile& t : tree.tiles) {
    deepest = std::max(deepest, t.z);
    if (t.z < 8) {
      EXPECT_LE(t.end - t.begin, rows) << t.key();
    }
    if (!t.children.empty()) {
      EXPECT_EQ(t.end - t.begin, rows) << t.key();
    }
    float w = (tree.bounds.x1 - tree.bounds.x0) / float(1 << t.z),
          h = (tree.bounds.y1 - tree.bounds.y0) / float(1 << t.z);
    EXPECT_NEAR(t.bounds.x0, tree.bounds.x0 + float(t.x) * w, 1e-4);
    EXPECT_NEAR(t.bounds.y1, tree.bounds.y0 + float(t.y + 1) * h, 1e-4);
    for (int64_t k = t.begin; k < t.end; ++k) {
      uint32_t r = tree.order[size_t(k)];
      ++seen[r];
      float x = xy[2 * r], y = xy[2 * r + 1];
      ASSERT_TRUE(x >= t.bounds.x0 && x < t.bounds.x1 && y >= t.bounds.y0 && y < t.bounds.y1)
          << t.key() << " row " << r;
    }
    for (int c : t.children) {
      const io::Tile& child = tree.tiles[size_t(c)];
      EXPECT_EQ(child.z, t.z + 1);
      EXPECT_EQ(child.x / 2, t.x);
      EXPECT_EQ(child.y / 2, t.y);
    }
  }
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[size_t(i)], 1) << "row " << i;
  // The pile of 10,000 identical points (500 a level) stops at the depth limit, in one tile past its limit.
  EXPECT_EQ(deepest, 8);
  // The root samples the whole map: about half its rows are the pile (half of all rows).
  int64_t piled = 0;
  for (int64_t k = 0; k < rows; ++k) piled += xy[2 * tree.order[size_t(k)]] == 3.f;
  EXPECT_NEAR(double(piled) / rows, 0.5, 0.1);
}

TEST(QuadTree, OnePointAndFlatMaps) {
  float one[2] = {1.f, 1.f};
  io::QuadTree t = io::build_quadtree(one, 1, 10);
  ASSERT_EQ(t.tiles.size(), 1u);
  EXPECT_LT(t.bounds.x0, t.bounds.x1);
  std::vector<float> line(200);
  for (int i = 0; i < 100; ++i) line[size_t(2 * i)] = float(i), line[size_t(2 * i + 1)] = 0.f;
  io::QuadTree l = io::build_quadtree(line.data(), 100, 10);
  int64_t total = 0;
  for (const io::Tile& tile : l.tiles) total += tile.end - tile.begin;
  EXPECT_EQ(total, 100);
}

TEST(MapTiles, BadFoldersAreRefusedAndNothingIsLeft) {
  std::vector<float> xy = map_points(300);
  fs::path base = fs::path(::testing::TempDir()) / "surfgrad_tiles_test";
  fs::remove_all(base);
  fs::create_directories(base / "full");
  std::ofstream(base / "full" / "mine.txt") << "mine";
  std::ofstream(base / "a_file") << "x";
  auto refused = [&](const fs::path& dir, bool force, const std::string& needle) {
    sgtest::expect_error(ErrorKind::Value, dir.filename().string(), needle,
                         [&] { io::write_map_tiles(dir.string(), xy.data(), 300, nullptr, force, 64); });
  };
  refused(base / "full", false, "is a folder that is not empty");
  refused(base / "a_file", true, "is a file, not a folder");
  refused(base / "no" / "such", false, "does not exist");
  EXPECT_TRUE(fs::exists(base / "full" / "mine.txt"));
  EXPECT_GT(io::write_map_tiles((base / "full").string(), xy.data(), 300, nullptr, true, 64), 4);
  EXPECT_FALSE(fs::exists(base / "full" / "mine.txt"));
  EXPECT_TRUE(fs::exists(base / "full" / "manifest.json") && fs::exists(base / "full" / "0" / "0" / "0.feather"));
  for (const auto& e : fs::directory_iterator(base)) EXPECT_NE(e.path().filename().string()[0], '.') << e.path();
}

}  // namespace
#endif
