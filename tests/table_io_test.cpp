// Tables in and out (src/io/arrow_*.cpp, table_columns.cpp): Parquet and Arrow IPC points as
// fixed-size lists, lists and numeric columns, read in blocks; bad tables refused naming the
// file and column; the map written as Parquet with the input's columns carried through.
#if SURFGRAD_HAS_ARROW
#include "io/table_io.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/table_columns.hpp"
#include "io_test_util.hpp"
#include "table_test_util.hpp"
#include "test_util.hpp"

namespace {

using surfgrad::ErrorKind;
using table_test::Layout;
using table_test::Points;
namespace tt = table_test;

std::string path_of(const std::string& name) { return sgtest::io_path("table_" + name); }

// All points of a table file as rows × dims floats, read in blocks of `block_bytes`.
struct Read {
  int64_t rows = 0, dims = 0;
  std::vector<float> v;
  std::vector<int64_t> firsts;  // first row of each block
};
Read read_all(const std::string& path, const std::vector<std::string>& cols = {}, int64_t block_bytes = 1 << 20) {
  Read r;
  r.rows = surfgrad::io::read_table_points(path, cols, block_bytes, r.dims,
                                           [&](const float* rows, int64_t first, int64_t n, int64_t d, int64_t) {
                                             // Row groups may come in any order: each run in its place.
                                             r.firsts.push_back(first);
                                             if (r.v.size() < size_t((first + n) * d))
                                               r.v.resize(size_t((first + n) * d));
                                             std::copy(rows, rows + n * d, r.v.begin() + first * d);
                                           });
  std::sort(r.firsts.begin(), r.firsts.end());
  return r;
}

void expect_points(const Read& r, int64_t n, int64_t d) {
  ASSERT_EQ(r.rows, n);
  ASSERT_EQ(r.dims, d);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) ASSERT_EQ(r.v[size_t(i * d + j)], tt::value(i, j)) << i << ", " << j;
}

std::string points_parquet(const std::string& name, const Points& p, int64_t row_group = 4) {
  std::string path = path_of(name);
  tt::write_parquet(tt::table_of({{"id", tt::ids(p.n)}, {"embedding", tt::points_array(p)}, {"text", tt::texts(p.n)}}),
                    path, row_group);
  return path;
}

TEST(TableIo, FixedSizeListsListsAndLargeListsInBlocks) {
  for (Layout layout : {Layout::FixedList, Layout::List, Layout::LargeList})
    for (bool f64 : {false, true}) {
      Points p{.n = 37, .d = 5, .layout = layout, .f64 = f64};
      std::string path = points_parquet("lists.parquet", p, 8);
      // 3 rows a block: blocks straddle batches and row groups.
      Read r = read_all(path, {}, 3 * 5 * 4);
      expect_points(r, 37, 5);
      // Runs never straddle a block (3 rows) and cover every row once.
      for (size_t k = 0; k < r.firsts.size(); ++k)
        EXPECT_EQ(r.firsts[k] / 3, k + 1 < r.firsts.size() ? (r.firsts[k + 1] - 1) / 3 : 12);
      EXPECT_GE(r.firsts.size(), 13u);
      expect_points(read_all(path, {"embedding"}), 37, 5);
    }
}

TEST(TableIo, ArrowIpcFileFeatherAndStream) {
  Points p{.n = 11, .d = 3};
  auto t = tt::table_of({{"vec", tt::points_array(p)}, {"id", tt::ids(p.n)}});
  for (std::string name : {"points.arrow", "points.feather"}) {
    tt::write_ipc(t, path_of(name));
    EXPECT_TRUE(surfgrad::io::is_table_file(path_of(name)));
    expect_points(read_all(path_of(name)), 11, 3);  // the first list column, as the shards' rule says
  }
  tt::write_ipc(t, path_of("points.arrows"), true);
  expect_points(read_all(path_of("points.arrows"), {"vec"}), 11, 3);
}

TEST(TableIo, NumericColumnsAreDimensionsInTheOrderNamed) {
  int64_t n = 9;
  arrow::FloatBuilder a;
  arrow::DoubleBuilder b;
  arrow::Int32Builder c;
  for (int64_t i = 0; i < n; ++i)
    tt::ok(a.Append(tt::value(i, 0))), tt::ok(b.Append(tt::value(i, 1))), tt::ok(c.Append(int32_t(i)));
  auto t = tt::table_of({{"a", tt::ok(a.Finish())}, {"b", tt::ok(b.Finish())}, {"c", tt::ok(c.Finish())}});
  tt::write_parquet(t, path_of("cols.parquet"));
  Read r = read_all(path_of("cols.parquet"), {"c", "a"});
  ASSERT_EQ(r.dims, 2);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(r.v[size_t(2 * i)], float(i));
    EXPECT_EQ(r.v[size_t(2 * i + 1)], tt::value(i, 0));
  }
  // No column named and no list: every column, if all are floats (c is not: named in the error).
  sgtest::expect_error(ErrorKind::Value, path_of("cols.parquet"), "column 'c' is int32",
                       [&] { read_all(path_of("cols.parquet")); });
}

TEST(TableIo, BadColumnsAreNamed) {
  std::string path = points_parquet("bad_cols.parquet", Points{});
  sgtest::expect_error(ErrorKind::Value, path, "no column 'emb' (its columns: id, embedding, text)",
                       [&] { read_all(path, {"emb"}); });
  sgtest::expect_error(ErrorKind::Value, path, "column 'text' is string", [&] { read_all(path, {"text"}); });
  sgtest::expect_error(ErrorKind::Value, path, "name it alone", [&] { read_all(path, {"embedding", "id"}); });
  sgtest::expect_error(ErrorKind::Value, path, "named twice", [&] { read_all(path, {"id", "id"}); });
  arrow::ListBuilder lb(arrow::default_memory_pool(), std::make_shared<arrow::StringBuilder>());
  tt::ok(lb.Append());
  tt::ok(static_cast<arrow::StringBuilder&>(*lb.value_builder()).Append("a"));
  tt::write_parquet(tt::table_of({{"tags", tt::ok(lb.Finish())}}), path_of("strings.parquet"));
  sgtest::expect_error(ErrorKind::Value, path_of("strings.parquet"), "column 'tags' is list<",
                       [&] { read_all(path_of("strings.parquet")); });
}

TEST(TableIo, RaggedNullAndNonFiniteRowsAreNamed) {
  auto check = [](const std::string& name, Points p, const std::string& needle) {
    std::string path = points_parquet(name, p);
    sgtest::expect_error(ErrorKind::Value, path, needle, [&] { read_all(path); });
  };
  check("ragged.parquet", Points{.n = 10, .d = 4, .layout = Layout::List, .short_row = 6},
        "column 'embedding', row 6 has 3 values, the rows before it 4");
  check("null_row.parquet", Points{.n = 10, .d = 4, .layout = Layout::List, .null_row = 5},
        "column 'embedding', row 5 is null");
  check("null_row_fixed.parquet", Points{.n = 10, .d = 4, .null_row = 9}, "row 9 is null");
  check("null_value.parquet", Points{.n = 10, .d = 4, .null_value_row = 7}, "row 7 holds a null value");
  check("nan.parquet", Points{.n = 10, .d = 4, .f64 = true, .nan_row = 3}, "row 3 has a NaN");
  Points f64{.n = 10, .d = 4, .layout = Layout::List, .f64 = true};
  auto t = tt::table_of({{"embedding", tt::points_array(f64)}});
  tt::write_ipc(t, path_of("ok.feather"));
  expect_points(read_all(path_of("ok.feather")), 10, 4);
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A Parquet file of `real` rows whose footer says `fake`: thrift compact's num_rows (field header
// 0x16, then a zigzag varint) rewritten in the file's metadata (`all`: in the row groups' too),
// the footer's length updated.
std::string declare_rows(const std::string& bytes, int64_t real, int64_t fake, bool all) {
  auto varint = [](uint64_t z) {
    std::string s;
    for (; z >= 0x80; z >>= 7) s += char(0x80 | (z & 0x7f));
    return s + char(z);
  };
  uint32_t len;
  std::memcpy(&len, bytes.data() + bytes.size() - 8, 4);
  std::string prefix = bytes.substr(0, bytes.size() - 8 - len), footer = bytes.substr(prefix.size(), len);
  std::string from = "\x16" + varint(uint64_t(real) * 2), to = "\x16" + varint(uint64_t(fake) * 2);
  size_t at = footer.find(from);
  EXPECT_NE(at, std::string::npos);
  for (int k = 0; at != std::string::npos && (k == 0 || all); ++k, at = footer.find(from, at + to.size()))
    footer.replace(at, from.size(), to);
  len = uint32_t(footer.size());
  std::string tail(4, '\0');
  std::memcpy(tail.data(), &len, 4);
  return prefix + footer + tail + "PAR1";
}

TEST(TableIo, TruncatedCorruptAndLyingFilesAreRefusedWithoutGiantAllocations) {
  Points p{.n = 50, .d = 4};
  std::string good = bytes_of(points_parquet("good.parquet", p, 64));
  auto refuse = [](const std::string& name, const std::string& bytes, const std::string& needle) {
    std::string path = sgtest::write_bytes("table_" + name, bytes);
    sgtest::expect_error(ErrorKind::IO, path, needle, [&] { read_all(path, {}, int64_t(1) << 30); }, 64);
  };
  refuse("truncated.parquet", good.substr(0, good.size() / 2), "failed");
  refuse("empty.parquet", "", "neither a Parquet file");
  std::string corrupt = good;
  for (size_t i = corrupt.size() - 200; i < corrupt.size() - 8; ++i) corrupt[i] = char(0xA5 ^ i);
  refuse("corrupt.parquet", corrupt, "failed");
  refuse("text.arrow", "id,x\n1,2\n", "neither a Parquet file");
  std::string ipc_path = path_of("good.arrow");
  tt::write_ipc(tt::table_of({{"embedding", tt::points_array(p)}}), ipc_path);
  std::string ipc = bytes_of(ipc_path);
  refuse("truncated.arrow", ipc.substr(0, ipc.size() - 40), "failed");
  // A list's offsets pointing past its values (an IPC file's bytes are mapped, not copied): the
  // batches of 3 rows hold offsets 0, 2, 4, 6; the last made wild.
  tt::Points lists{.n = 6, .d = 2, .layout = Layout::List};
  tt::write_ipc(tt::table_of({{"embedding", tt::points_array(lists)}}), ipc_path);
  std::string wild = bytes_of(ipc_path), offsets(16, '\0');
  for (int32_t i = 0; i < 4; ++i) {
    int32_t o = 2 * i;
    std::memcpy(offsets.data() + 4 * i, &o, 4);
  }
  size_t at = wild.find(offsets);
  ASSERT_NE(at, std::string::npos);
  int32_t far = 1 << 30;
  std::memcpy(wild.data() + at + 12, &far, 4);
  refuse("wild_offsets.arrow", wild, "failed");
  // 10^9 rows declared for 50: by the file (counted, refused) and by its row group too.
  refuse("lying_file.parquet", declare_rows(good, 50, 1000000000, false), "its metadata declares 1000000000");
  refuse("lying_row_group.parquet", declare_rows(good, 50, 1000000000, true), "declares 1000000000");
}

}  // namespace
#endif
