// Numbers as options are written and read: integers as integers ("1048576", not "1.04858e+06"),
// others as %g; text read strictly (the whole string a decimal number, finite; integers whole,
// so "1e9" is not an iteration count and "010" is ten).
#pragma once
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>

namespace surfgrad {

inline std::string number_text(double v) {
  char buf[40];
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e16)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

inline bool parse_number_text(std::string_view text, bool integer, double& out) {
  if (text.size() > 1 && text[0] == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  if (integer) {
    int64_t i = 0;
    auto [p, ec] = std::from_chars(text.data(), end, i);
    if (ec != std::errc() || p != end) return false;
    out = double(i);
    return true;
  }
  // strtod, not from_chars: the browser build's libc++ has no floating-point from_chars. Only
  // decimal digits, sign, point and exponent are taken (strtod alone would read "0x10", "inf",
  // "nan" and leading spaces).
  for (char c : text)
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) return false;
  const std::string copy(text);
  char* stop = nullptr;
  double v = std::strtod(copy.c_str(), &stop);
  if (stop != copy.c_str() + copy.size() || !std::isfinite(v)) return false;
  out = v;
  return true;
}

}  // namespace surfgrad
