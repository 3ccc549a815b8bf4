// Options objects from JavaScript, passed as JSON text: parsed, unknown keys refused, numbers read
// as the kind the library wants. Every error names the option ("map option 'seed' must be ...").
// A misspelt option silently ignored would be a run with the wrong parameters, so none is.
#pragma once
#include <cmath>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

#include "surfgrad/error.hpp"

namespace surfgrad::web {

// `what` names the options in messages: "map option", "tileSpd option".
inline nlohmann::json parse_options_object(const char* text, const std::string& what) {
  nlohmann::json o = nlohmann::json::parse(text ? text : "{}", nullptr, false);
  if (o.is_discarded() || !o.is_object()) throw Error(ErrorKind::Value, what + "s are not a JSON object");
  return o;
}

inline void refuse_unknown_options(const nlohmann::json& o, std::initializer_list<const char*> known,
                                   const std::string& what) {
  for (auto& [key, value] : o.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (ok) continue;
    std::string list;
    for (const char* k : known) list += std::string(list.empty() ? "" : ", ") + k;
    throw Error(ErrorKind::Value, "unknown " + what + " '" + key + "' (options: " + list + ")");
  }
}

// The option as a number of type T, or `fallback` when absent or null.
template <typename T>
T option_number(const nlohmann::json& o, const char* key, T fallback, const std::string& what) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return fallback;
  if (!it->is_number()) throw Error(ErrorKind::Value, what + " '" + key + "' must be a number, not " + it->dump());
  double v = it->get<double>();
  if constexpr (std::is_integral_v<T>) {
    if (!std::isfinite(v) || v != std::floor(v) || v < double(std::numeric_limits<T>::lowest()) ||
        v > double(std::numeric_limits<T>::max()))
      throw Error(ErrorKind::Value, what + " '" + key + "' must be a whole number in range, not " + it->dump());
  } else {
    if (!std::isfinite(v)) throw Error(ErrorKind::Value, what + " '" + key + "' must be finite, not " + it->dump());
  }
  return T(v);
}

// The option as a string, or `fallback` when absent or null.
inline std::string option_string(const nlohmann::json& o, const char* key, const std::string& fallback,
                                 const std::string& what) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return fallback;
  if (!it->is_string()) throw Error(ErrorKind::Value, what + " '" + key + "' must be a string, not " + it->dump());
  return it->get<std::string>();
}

}  // namespace surfgrad::web
