// CSV points on the host, parsed strictly: every field is one whole decimal number (from_chars
// over the trimmed field), so "0.5x", "0x1f", "1,,2" and ragged rows are errors naming
// file:line:column rather than being read in part.
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "io/host_formats.hpp"
#include "io/input_limits.hpp"

namespace surfgrad::io {

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string shown(std::string_view field) {
  std::string s(field.substr(0, 40));
  for (char& c : s)
    if (uint8_t(c) < 0x20) c = '?';
  return "'" + s + (field.size() > 40 ? "...'" : "'");
}

enum class Parsed { Number, NotNumber, NotFinite };

// One field as a double: optional leading '+', then what from_chars takes in full.
Parsed parse_number(std::string_view field, double& value) {
  std::string_view body = field;
  if (!body.empty() && body[0] == '+') body.remove_prefix(1);
  if (body.empty() || body[0] == '+') return Parsed::NotNumber;
  const char* end = body.data() + body.size();
  auto [ptr, ec] = std::from_chars(body.data(), end, value, std::chars_format::general);
  if (ptr != end || ec == std::errc::invalid_argument) return Parsed::NotNumber;
  if (ec == std::errc::result_out_of_range) {
    // Underflow reads as the nearest double (0 or subnormal); overflow is not a finite number.
    value = std::strtod(std::string(body).c_str(), nullptr);
    if (std::isinf(value)) return Parsed::NotFinite;
  }
  return std::isfinite(value) ? Parsed::Number : Parsed::NotFinite;
}

}  // namespace

CsvTable decode_csv(std::string_view text, const std::string& name) {
  CsvTable out;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // the UTF-8 mark spreadsheets write
  std::vector<double> row;
  size_t line_start = 0;
  int64_t line_no = 0;
  bool first_line = true;
  while (line_start < text.size()) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    std::string_view line = text.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto where = [&](size_t column) {
      return "'" + name + "':" + std::to_string(line_no) + ":" + std::to_string(column + 1) + ": ";
    };
    // Fields with their columns, trimmed of blanks (and of the \r of CRLF files).
    std::vector<std::pair<std::string_view, size_t>> fields;
    for (size_t at = 0;;) {
      size_t comma = line.find(',', at);
      size_t stop = comma == std::string_view::npos ? line.size() : comma, a = at, b = stop;
      while (a < b && is_blank(line[a])) ++a;
      while (b > a && is_blank(line[b - 1])) --b;
      fields.emplace_back(line.substr(a, b - a), a < b ? a : at);
      if (comma == std::string_view::npos) break;
      at = comma + 1;
    }
    row.clear();
    if (first_line) {
      // A header names the columns: a first line in which no field is a number is skipped.
      first_line = false;
      bool any_number = false;
      for (auto& [field, column] : fields) {
        double v;
        any_number = any_number || parse_number(field, v) != Parsed::NotNumber;
      }
      if (!any_number) continue;
    }
    for (auto& [field, column] : fields) {
      double v = 0;
      if (field.empty())
        throw Error(ErrorKind::IO, where(column) + "empty field (line " + std::to_string(line_no) +
                                       "); every row needs a number in every column");
      Parsed p = parse_number(field, v);
      if (p == Parsed::NotFinite)
        throw Error(ErrorKind::Value, where(column) + shown(field) + " is not a finite number: point " +
                                          std::to_string(out.rows) +
                                          " has a NaN or infinite value; surfgrad maps finite numbers only (drop or "
                                          "impute that point)");
      if (p == Parsed::NotNumber)
        throw Error(ErrorKind::IO, where(column) + "non-number " + shown(field) + " (line " + std::to_string(line_no) +
                                       ", column " + std::to_string(column + 1) +
                                       "); fields must be plain decimal numbers such as -1.5e3 (no hex, units or "
                                       "other trailing characters)");
      row.push_back(v);
    }
    if (out.rows > 0 && int64_t(row.size()) != out.cols)
      throw Error(ErrorKind::IO, where(0) + "line " + std::to_string(line_no) + " has " + std::to_string(row.size()) +
                                     " values, earlier lines " + std::to_string(out.cols) +
                                     "; every row needs the same number of columns");
    out.cols = int64_t(row.size());
    out.values.insert(out.values.end(), row.begin(), row.end());
    ++out.rows;
  }
  return out;
}

}  // namespace surfgrad::io
