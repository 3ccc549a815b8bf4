// The point and kept columns of a table, chosen by the shards' conventions (table_columns.hpp).
#include "io/table_columns.hpp"

#include "surfgrad/error.hpp"

namespace surfgrad::io {

namespace {

int find_column(const std::vector<TableColumn>& columns, const std::string& name) {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i].name == name) return int(i);
  return -1;
}

Error column_error(const std::string& file, const std::string& what) {
  return Error(ErrorKind::Value, "'" + file + "': " + what);
}

Error missing(const std::vector<TableColumn>& columns, const std::string& name, const std::string& file,
              const std::string& option) {
  return column_error(file, "no column '" + name + "' (its columns: " + column_names_text(columns) +
                                "); name one of those with " + option);
}

}  // namespace

std::string column_names_text(const std::vector<TableColumn>& columns) {
  std::string s;
  for (size_t i = 0; i < columns.size() && i < 12; ++i) s += (i ? ", " : "") + columns[i].name;
  if (columns.size() > 12) s += ", … (" + std::to_string(columns.size()) + " in all)";
  return s.empty() ? "none" : s;
}

std::vector<int> choose_point_columns(const std::vector<TableColumn>& columns, const std::vector<std::string>& wanted,
                                      const std::string& file) {
  const std::string fix =
      "; name a list column of floats (one point a row) or numeric columns (one a dimension) "
      "with --column";
  std::vector<int> chosen;
  if (wanted.empty()) {
    int e = find_column(columns, kEmbeddingColumn);
    for (size_t i = 0; e < 0 && i < columns.size(); ++i)
      if (columns[i].kind == ColumnKind::FloatList || columns[i].kind == ColumnKind::OtherList) e = int(i);
    if (e >= 0) {
      chosen.push_back(e);
    } else {
      for (size_t i = 0; i < columns.size(); ++i) {
        if (columns[i].kind != ColumnKind::Float)
          throw column_error(file, "no 'embedding' or list column, and column '" + columns[i].name + "' is " +
                                       columns[i].type + ", so the points are not all of its (float) columns" + fix);
        chosen.push_back(int(i));
      }
      if (chosen.empty()) throw column_error(file, "the table has no columns" + fix);
    }
  } else {
    for (const std::string& name : wanted) {
      int i = find_column(columns, name);
      if (i < 0) throw missing(columns, name, file, "--column");
      for (int c : chosen)
        if (c == i) throw column_error(file, "column '" + name + "' is named twice in --column");
      chosen.push_back(i);
    }
  }
  for (int i : chosen) {
    const TableColumn& c = columns[size_t(i)];
    bool list = c.kind == ColumnKind::FloatList || c.kind == ColumnKind::OtherList;
    if (c.kind == ColumnKind::OtherList || c.kind == ColumnKind::Other)
      throw column_error(file, "column '" + c.name + "' is " + c.type +
                                   (list ? "; a point column must be a list of floats (one point a row)"
                                         : "; point columns must be numeric (float or integer)") +
                                   fix);
    if (list && chosen.size() > 1)
      throw column_error(file, "column '" + c.name + "' is a list (" + c.type +
                                   "): it holds every dimension, so name it alone with --column, or name only "
                                   "numeric columns");
  }
  return chosen;
}

std::vector<int> choose_kept_columns(const std::vector<TableColumn>& columns, const std::vector<std::string>& keep,
                                     const std::string& file) {
  std::vector<int> kept;
  for (const std::string& name : keep) {
    if (name == kMapX || name == kMapY)
      throw column_error(file, "--keep " + name + ": the map writes its own '" + name +
                                   "' column; rename the input's column first (or leave it out of --keep)");
    int i = find_column(columns, name);
    if (i < 0) throw missing(columns, name, file, "--keep");
    for (int k : kept)
      if (k == i) throw column_error(file, "column '" + name + "' is named twice in --keep");
    kept.push_back(i);
  }
  return kept;
}

int choose_column(const std::vector<TableColumn>& columns, const std::string& name, const std::string& file,
                  const std::string& option) {
  int i = find_column(columns, name);
  if (i < 0) throw missing(columns, name, file, option);
  return i;
}

}  // namespace surfgrad::io
