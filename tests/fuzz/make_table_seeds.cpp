// Seeds for fuzz_table: small valid Parquet and Arrow IPC files (lists, fixed-size lists, numeric
// columns, a stream), written with Arrow C++ itself: make_table_seeds DIR.
#include <string>

#include "../table_test_util.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  namespace tt = table_test;
  std::string dir = argv[1];
  tt::Points fixed{.n = 6, .d = 3}, list{.n = 5, .d = 2, .layout = tt::Layout::List, .f64 = true};
  tt::write_parquet(tt::table_of({{"embedding", tt::points_array(fixed)}, {"id", tt::ids(6)}}), dir + "/fixed.parquet",
                    4);
  tt::write_parquet(tt::table_of({{"embedding", tt::points_array(list)}, {"text", tt::texts(5)}}),
                    dir + "/list.parquet");
  arrow::FloatBuilder a;
  for (int i = 0; i < 7; ++i) tt::ok(a.Append(tt::value(i, 0)));
  tt::write_parquet(tt::table_of({{"a", tt::ok(a.Finish())}}), dir + "/column.parquet");
  tt::write_ipc(tt::table_of({{"embedding", tt::points_array(list)}}), dir + "/list.arrow");
  tt::write_ipc(tt::table_of({{"embedding", tt::points_array(fixed)}}), dir + "/fixed.arrows", true);
  // Label columns (--labels-column): integers, and class names dictionary-encoded.
  arrow::Int32Builder ints;
  arrow::StringDictionaryBuilder names;
  for (int i = 0; i < 6; ++i) tt::ok(ints.Append(i % 3)), tt::ok(names.Append(i % 2 ? "cat" : "dog"));
  auto text = tt::texts(6);
  tt::write_parquet(
      tt::table_of({{"embedding", tt::points_array(fixed)}, {"label", tt::ok(ints.Finish())}, {"text", text}}),
      dir + "/labels.parquet", 4);
  tt::write_ipc(tt::table_of({{"embedding", tt::points_array(fixed)}, {"label", tt::ok(names.Finish())}}),
                dir + "/labels.arrow");
  return 0;
}
