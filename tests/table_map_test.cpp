// Tables through the GPU and the program: a table's points uploaded in blocks, `surfgrad map
// t.parquet -o m.parquet --keep …` writing x, y and the kept columns, bad options and bad tables
// refused before anything is written or overwritten.
#if SURFGRAD_HAS_ARROW
#include <gtest/gtest.h>

#include "cli_test_util.hpp"
#include "io/table_io.hpp"
#include "io_test_util.hpp"
#include "table_test_util.hpp"
#include "test_util.hpp"

namespace {

namespace tt = table_test;
using cli_test::Exit;
using cli_test::run;

TEST(TableMap, PointsUploadInBlocks) {
  tt::Points p{.n = 23, .d = 6, .layout = tt::Layout::List};
  std::string path = sgtest::io_path("table_gpu.parquet");
  tt::write_parquet(tt::table_of({{"embedding", tt::points_array(p)}}), path, 5);
  surfgrad::PointBlocks b;
  // Row groups come in any order: every order leaves every block whole (a few tries).
  for (int k = 0; k < 8; ++k) {
    b = surfgrad::io::load_table_point_blocks(sgtest::ctx(), path, {}, 4 * 6 * 4);
    ASSERT_EQ(b.blocks.size(), 6u);
    ASSERT_EQ(b.rows(), 23);
  }
  EXPECT_EQ(b.dims(), 6);
  std::vector<float> all;
  for (auto& t : b.blocks) {
    auto v = t.to_vector<float>();
    all.insert(all.end(), v.begin(), v.end());
  }
  for (int64_t i = 0; i < 23; ++i)
    for (int64_t j = 0; j < 6; ++j) ASSERT_EQ(all[size_t(i * 6 + j)], tt::value(i, j));
  // An IPC stream declares no row count: its last block is cut to the rows that came.
  std::string stream = sgtest::io_path("table_gpu.arrows");
  tt::write_ipc(tt::table_of({{"embedding", tt::points_array(p)}}), stream, true);
  b = surfgrad::io::load_table_point_blocks(sgtest::ctx(), stream, {}, 4 * 6 * 4);
  ASSERT_EQ(b.blocks.size(), 6u);
  EXPECT_EQ(b.blocks.back().shape(0), 3);
  auto last = b.blocks.back().to_vector<float>();
  for (int64_t j = 0; j < 6; ++j) EXPECT_EQ(last[size_t(2 * 6 + j)], tt::value(22, j));
}

TEST(TableMap, WriterCarriesKeptColumnsInRowGroups) {
  int64_t n = 70;
  tt::Points p{.n = n, .d = 3};
  std::string in = sgtest::io_path("table_keep.arrow"), out = sgtest::io_path("table_keep_map.parquet");
  tt::write_ipc(tt::table_of({{"id", tt::ids(n)}, {"embedding", tt::points_array(p)}, {"text", tt::texts(n)}}), in);
  std::vector<float> xy(size_t(2 * n));
  for (size_t i = 0; i < xy.size(); ++i) xy[i] = float(i) * 0.5f;
  surfgrad::io::write_map_parquet(out, xy.data(), n, in, {"text", "id"});
  int groups = 0;
  arrow::Compression::type codec{};
  auto t = tt::read_parquet(out, &groups, &codec);
  ASSERT_EQ(t->num_rows(), n);
  EXPECT_EQ(groups, 1);
  EXPECT_EQ(codec, arrow::Compression::SNAPPY);
  ASSERT_EQ(t->schema()->ToString(), "x: float not null\ny: float not null\ntext: string\nid: int64");
  auto x = std::static_pointer_cast<arrow::FloatArray>(tt::ok(arrow::Concatenate(t->column(0)->chunks())));
  auto y = std::static_pointer_cast<arrow::FloatArray>(tt::ok(arrow::Concatenate(t->column(1)->chunks())));
  auto id = std::static_pointer_cast<arrow::Int64Array>(tt::ok(arrow::Concatenate(t->column(3)->chunks())));
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(x->Value(i), float(2 * i) * 0.5f);
    ASSERT_EQ(y->Value(i), float(2 * i + 1) * 0.5f);
    ASSERT_EQ(id->Value(i), 1000 + i);
  }
  // No --keep: id is the row number, as surfgrad.distributed writes id, x, y.
  surfgrad::io::write_map_parquet(out, xy.data(), n, in, {});
  EXPECT_EQ(tt::read_parquet(out)->schema()->ToString(), "x: float not null\ny: float not null\nid: int64 not null");
  sgtest::expect_error(surfgrad::ErrorKind::Value, in, "--keep x: the map writes its own 'x'",
                       [&] { surfgrad::io::write_map_parquet(out, xy.data(), n, in, {"x"}); });
  sgtest::expect_error(surfgrad::ErrorKind::IO, in, "different number of rows",
                       [&] { surfgrad::io::write_map_parquet(out, xy.data(), n - 1, in, {"id"}); });
}

class TableCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(cli_test::cli_binary())) GTEST_SKIP() << "no surfgrad beside the tests";
  }
};

TEST_F(TableCli, MapParquetToParquetWithKeptColumns) {
  cli_test::Scratch s("table_cli");
  int64_t n = 120;
  tt::Points p{.n = n, .d = 8, .layout = tt::Layout::List};
  std::string in = (s.dir / "in.parquet").string(), out = (s.dir / "map.parquet").string();
  tt::write_parquet(tt::table_of({{"id", tt::ids(n)}, {"emb", tt::points_array(p)}, {"text", tt::texts(n)}}), in, 50);
  Exit r = run("map --column emb --keep id,text -o '" + out + "' '" + in + "' --perplexity 5 --iterations 20");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("of 120 points in 8 dimensions"), std::string::npos) << r.output;
  auto t = tt::read_parquet(out);
  EXPECT_EQ(t->num_rows(), n);
  EXPECT_EQ(t->schema()->ToString(), "x: float not null\ny: float not null\nid: int64\ntext: string");
  EXPECT_FALSE(std::filesystem::exists(s.dir / "map.parquet.npy"));

  // Refused before any work, naming the file and column; the earlier map is left as it was.
  auto before = std::filesystem::last_write_time(out);
  r = run("map '" + in + "' --column embedding -o '" + out + "' --perplexity 5 --iterations 20");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("no column 'embedding' (its columns: id, emb, text)"), std::string::npos) << r.output;
  r = run("map '" + in + "' --column emb -o '" + out + "' --keep label --perplexity 5 --iterations 20");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("no column 'label'"), std::string::npos) << r.output;
  r = run("map '" + in + "' --column emb -o '" + (s.dir / "m").string() + "' --keep id");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("name the output NAME.parquet"), std::string::npos) << r.output;
  std::string npy = s.file("p.npy", "");
  r = run("map '" + npy + "' --column emb -o '" + out + "'");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("is not one: leave --column out"), std::string::npos) << r.output;
  EXPECT_EQ(std::filesystem::last_write_time(out), before);
}

}  // namespace
#endif
