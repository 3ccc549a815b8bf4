// `surfgrad map`'s option flags, made from the library's map-option schema: one flag per
// distinct CLI name (t-SNE's and UMAP's --learning-rate share one), its help line the schema's
// doc, range and default; values are checked as they are parsed (type and range), then set on
// MapOptions for the chosen method.
#pragma once
#include <CLI/CLI.hpp>
#include <map>
#include <string>

#include "surfgrad/map_options.hpp"

namespace surfgrad::cli {

using MapFlagValues = std::map<std::string, std::string>;  // flag → the text given

void add_map_option_flags(CLI::App& command, MapFlagValues& given);
// Sets the given flags on `options` (the method first); a flag of the other method is a usage
// error naming both ("--perplexity is a t-SNE option; this map is UMAP").
void apply_map_option_flags(const MapFlagValues& given, MapOptions& options);

}  // namespace surfgrad::cli
