#include "map_option_flags.hpp"

#include <algorithm>
#include <vector>

#include "cli.hpp"
#include "surfgrad/error.hpp"
#include "surfgrad/map_pipeline.hpp"

namespace surfgrad::cli {

namespace {

// The schema's records that share each flag, in the schema's order.
std::vector<std::pair<std::string, std::vector<const MapOptionSpec*>>> flags() {
  std::vector<std::pair<std::string, std::vector<const MapOptionSpec*>>> out;
  for (const MapOptionSpec& s : map_option_schema()) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& f) { return f.first == s.cli; });
    if (it == out.end()) it = out.insert(out.end(), {s.cli, {}});
    it->second.push_back(&s);
  }
  return out;
}

std::string method_title(const char* method) { return std::string(method) == "umap" ? "UMAP" : "t-SNE"; }

// The value text checked against one record: an empty string if it fits, else why not.
std::string check(const MapOptionSpec& s, const std::string& text) {
  try {
    MapOptions scratch;
    set_map_option(scratch, s, text, s.cli);
    check_map_option(s, s.get(scratch));
    return {};
  } catch (const Error& e) {
    return e.message();
  }
}

}  // namespace

void add_map_option_flags(CLI::App& command, MapFlagValues& given) {
  for (auto& [flag, specs] : flags()) {
    std::string help, type;
    for (const MapOptionSpec* s : specs) {
      std::string auto_doc = s->has_automatic ? std::string("; auto: ") + s->automatic_doc : "";
      help += std::string(help.empty() ? "" : "\n") + s->doc + " (" + map_option_range(*s) + auto_doc + "; default " +
              map_option_default(*s) + ")";
      std::string t = s->type == MapOptionType::Choice    ? map_option_range(*s)
                      : s->type == MapOptionType::Integer ? "INT"
                                                          : "NUMBER";
      if (type.find(t) == std::string::npos) type += (type.empty() ? "" : "|") + t;
    }
    std::vector<const MapOptionSpec*> records = specs;
    command.add_option(flag, given[flag], help)
        ->check(CLI::Validator(
            [records](std::string& text) -> std::string {
              std::string why;
              for (const MapOptionSpec* s : records) {
                std::string w = check(*s, text);
                if (w.empty()) return {};
                if (why.empty()) why = w;
              }
              return why;
            },
            ""))
        ->type_name(type);
  }
}

void apply_map_option_flags(const MapFlagValues& given, MapOptions& options) {
  auto is_given = [&](const std::string& flag) {
    auto it = given.find(flag);
    return it != given.end() && !it->second.empty();
  };
  check_usage([&] {
    if (is_given("--method")) options.method = parse_map_method(given.at("--method"), "--method");
    for (const auto& [flag, text] : given) {
      if (text.empty() || flag == "--method") continue;
      const MapOptionSpec* s = find_map_option(flag, options.method);
      if (!s) {
        const MapOptionSpec* other =
            find_map_option(flag, options.method == MapMethod::Tsne ? MapMethod::Umap : MapMethod::Tsne);
        throw Error(ErrorKind::Value, flag + " is " +
                                          (other ? "a " + method_title(other->method) + " option" : "unknown") +
                                          "; this map is " + method_title(map_method_name(options.method).data()) +
                                          " (--method " + std::string(map_method_name(options.method)) + ")");
      }
      set_map_option(options, *s, text, flag);
    }
  });
}

}  // namespace surfgrad::cli
