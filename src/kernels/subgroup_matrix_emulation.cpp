// The builtins' rewrite (subgroup_matrix_emulation.hpp). The generated functions are named after
// the buffer they read or write, since WGSL cannot pass a pointer to a storage buffer's array.
#include "kernels/subgroup_matrix_emulation.hpp"

#include <regex>
#include <set>

namespace surfgrad::kernels {

namespace {

// The buffer names that `pattern`'s first group captures (sorted, each once).
std::set<std::string> captured(const std::string& wgsl, const std::regex& pattern) {
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(wgsl.begin(), wgsl.end(), pattern); it != std::sregex_iterator(); ++it)
    names.insert((*it)[1].str());
  return names;
}

// nested: the pointer is `&name[g]`, one inner array of an array of arrays (the matmul's panel
// kernel), passed on as an extra first parameter g.
std::string load_fn(const std::string& name, bool col_major, bool nested = false) {
  const std::string at = col_major ? "off + j * stride + i" : "off + i * stride + j";
  return "fn sm_load_" + std::string(col_major ? "col_" : "") + name + (nested ? "_at(g: u32, " : "(") +
         "off: u32, stride: u32) -> array<f32, 256> {\n  var r: array<f32, 256>;\n"
         "  for (var i = 0u; i < 16u; i++) { for (var j = 0u; j < 16u; j++) { r[i * 16u + j] = f32(" +
         name + (nested ? "[g]" : "") + "[" + at + "]); } }\n  return r;\n}\n";
}

std::string store_fn(const std::string& name, bool nested = false) {
  return "fn sm_store_" + name + (nested ? "_at(g: u32, " : "(") +
         "off: u32, v: array<f32, 256>, stride: u32) {\n  var va = v;\n"
         "  for (var i = 0u; i < 16u; i++) { for (var j = 0u; j < 16u; j++) { " +
         name + (nested ? "[g]" : "") + "[off + i * stride + j] = va[i * 16u + j]; } }\n}\n";
}

}  // namespace

std::string emulate_subgroup_matrix(const std::string& wgsl) {
  const std::regex row_load("subgroupMatrixLoad<\\w+, row_major>\\(&(\\w+), "),
      col_load("subgroupMatrixLoad<\\w+, col_major>\\(&(\\w+), "), store("subgroupMatrixStore<row_major>\\(&(\\w+), ");
  std::string fns =
      "fn sm_mma(x: array<f32, 256>, y: array<f32, 256>, z: array<f32, 256>) -> array<f32, 256> {\n"
      "  var xa = x; var ya = y; var r = z;\n"
      "  for (var i = 0u; i < 16u; i++) { for (var j = 0u; j < 16u; j++) {\n"
      "    var acc = r[i * 16u + j];\n"
      "    for (var k = 0u; k < 16u; k++) { acc = fma(xa[i * 16u + k], ya[k * 16u + j], acc); }\n"
      "    r[i * 16u + j] = acc; } }\n  return r;\n}\n";
  for (const std::string& name : captured(wgsl, row_load)) fns += load_fn(name, false);
  for (const std::string& name : captured(wgsl, col_load)) fns += load_fn(name, true);
  for (const std::string& name : captured(wgsl, store)) fns += store_fn(name);
  const std::regex row_load_at("subgroupMatrixLoad<\\w+, row_major>\\(&(\\w+)\\[(\\w+)\\], "),
      col_load_at("subgroupMatrixLoad<\\w+, col_major>\\(&(\\w+)\\[(\\w+)\\], "),
      store_at("subgroupMatrixStore<row_major>\\(&(\\w+)\\[(\\w+)\\], ");
  for (const std::string& name : captured(wgsl, row_load_at)) fns += load_fn(name, false, true);
  for (const std::string& name : captured(wgsl, col_load_at)) fns += load_fn(name, true, true);
  for (const std::string& name : captured(wgsl, store_at)) fns += store_fn(name, true);

  std::string s = std::regex_replace(wgsl, std::regex("enable chromium_experimental_subgroup_matrix;\n"), "");
  s = std::regex_replace(s, std::regex("subgroup_matrix_(left|right)<f16, 16, 16>|subgroup_matrix_result<f32, 16, 16>"),
                         "array<f32, 256>");
  s = std::regex_replace(s, row_load, "sm_load_$1(");
  s = std::regex_replace(s, col_load, "sm_load_col_$1(");
  s = std::regex_replace(s, store, "sm_store_$1(");
  s = std::regex_replace(s, row_load_at, "sm_load_$1_at($2, ");
  s = std::regex_replace(s, col_load_at, "sm_load_col_$1_at($2, ");
  s = std::regex_replace(s, store_at, "sm_store_$1_at($2, ");
  s = std::regex_replace(s, std::regex("subgroupMatrixMultiplyAccumulate\\("), "sm_mma(");
  const size_t entry = s.find("@compute");
  return s.substr(0, entry) + fns + s.substr(entry);
}

}  // namespace surfgrad::kernels
