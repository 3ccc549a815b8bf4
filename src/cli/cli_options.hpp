// Strict option values for CLI11: the whole string must be a decimal number ("1e9" is not an
// integer, "12x" is not a number, "010" is ten), finite, and inside the stated range, which
// --help shows. The validators rewrite integers to canonical decimal, because CLI11's own
// conversion would read "010" as octal and "0x10" as hex.
#pragma once
#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <system_error>

namespace surfgrad::cli {

inline std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// An integer in [lo, hi].
template <typename T>
CLI::Validator integer_in(T lo, T hi) {
  std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        T v{};
        const char* end = s.data() + s.size();
        auto [p, ec] = std::from_chars(s.data() + (s.size() > 1 && s[0] == '+' ? 1 : 0), end, v);
        if (s.empty() || ec == std::errc::invalid_argument || p != end)
          return "'" + s + "' is not a whole number (expected an integer in " + range + ")";
        if (ec == std::errc::result_out_of_range || v < lo || v > hi)
          return "'" + s + "' is out of range: must be an integer in " + range;
        s = std::to_string(v);
        return {};
      },
      "INT in " + range);
}

// A finite number in [lo, hi], or with open ends where asked: (lo, hi].
inline CLI::Validator number_in(double lo, double hi, bool lo_open = false, bool hi_open = false) {
  std::string range =
      std::string(lo_open ? "(" : "[") + format_number(lo) + ", " + format_number(hi) + (hi_open ? ")" : "]");
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        double v = 0;
        const char* end = s.data() + s.size();
        auto [p, ec] = std::from_chars(s.data() + (s.size() > 1 && s[0] == '+' ? 1 : 0), end, v);
        if (s.empty() || ec == std::errc::invalid_argument || p != end || !std::isfinite(v))
          return "'" + s + "' is not a finite number (expected a number in " + range + ")";
        bool ok = ec != std::errc::result_out_of_range && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
        if (!ok) return "'" + s + "' is out of range: must be a number in " + range;
        return {};
      },
      "NUMBER in " + range);
}

// One of a few words.
inline CLI::Validator one_of(std::initializer_list<std::string> words) {
  std::string list;
  for (auto& w : words) list += (list.empty() ? "" : "|") + w;
  std::vector<std::string> allowed(words);
  return CLI::Validator(
      [allowed, list](std::string& s) -> std::string {
        for (auto& w : allowed)
          if (s == w) return {};
        return "'" + s + "' is not one of " + list;
      },
      list);
}

}  // namespace surfgrad::cli
