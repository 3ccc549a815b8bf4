// Which columns of a table (Parquet, Arrow IPC / Feather) hold the points, and what a map
// written as a table holds. These are the conventions of surfgrad.distributed's shards
// (python/surfgrad/distributed/shards.py), written down once here, without Arrow, so that the
// readers, the writer and their messages agree and another front end can ask the same rules.
#pragma once
#include <string>
#include <vector>

namespace surfgrad::io {

// The column a table's points are looked for in when none is named.
inline constexpr const char* kEmbeddingColumn = "embedding";
// The map's columns in a table it is written to; `id` (the row number, int64) is written where no
// input column is carried through (--keep), as surfgrad.distributed writes id, x, y.
inline constexpr const char* kMapX = "x";
inline constexpr const char* kMapY = "y";
inline constexpr const char* kMapId = "id";

// What a column is, as far as points are concerned.
enum class ColumnKind {
  FloatList,  // list, large_list or fixed_size_list of float16/32/64: one point a row
  OtherList,  // a list of something else (refused, named)
  Float,      // float16/32/64: one dimension a column
  Integer,    // (u)int8…64: one dimension a column where named
  Other,      // strings, structs, …
};

struct TableColumn {
  std::string name;
  ColumnKind kind = ColumnKind::Other;
  std::string type;  // Arrow's name for it ("list<item: float>"), for messages
};

// The point columns of a table of `columns` (from `file`): those named in `wanted` (one list
// column, or one or more numeric columns); with none named, the shards' rule: the column
// "embedding" if there is one, else the first list column, else every column if all are floats.
// Returns their indices; throws a Value error naming the file, the column and the fix.
std::vector<int> choose_point_columns(const std::vector<TableColumn>& columns, const std::vector<std::string>& wanted,
                                      const std::string& file);

// Indices of the columns named in `keep` (carried from the input into the map's table); throws
// naming a missing one, a repeated one, or one that would collide with x, y.
std::vector<int> choose_kept_columns(const std::vector<TableColumn>& columns, const std::vector<std::string>& keep,
                                     const std::string& file);

// The index of the column `name`; throws naming the file, the column, the table's columns and
// `option` (the flag that names it, e.g. "--labels-column").
int choose_column(const std::vector<TableColumn>& columns, const std::string& name, const std::string& file,
                  const std::string& option);
// The map's label column (--labels-column carries the labels into the map's table under this name).
inline constexpr const char* kMapLabel = "label";

// "a, b, c" (for messages listing a table's columns; the first 12).
std::string column_names_text(const std::vector<TableColumn>& columns);

}  // namespace surfgrad::io
