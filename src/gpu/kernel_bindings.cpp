// Reading a kernel's bindings from its WGSL: the layout of its pipeline, and what the launch seam
// checks the tensors it binds against.
#include <cstdlib>

#include "impl.hpp"

namespace surfgrad::gpu {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The text between the '<' at `open` and its matching '>' (nested: array<vec2<f32>>).
std::string_view bracketed(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '<')
      ++depth;
    else if (s[i] == '>' && --depth == 0)
      return s.substr(open + 1, i - open - 1);
  }
  return {};
}

}  // namespace

std::vector<KernelBinding> declared_bindings(std::string_view wgsl) {
  std::vector<KernelBinding> out;
  size_t pos = 0;
  while ((pos = wgsl.find("@binding(", pos)) != std::string_view::npos) {
    size_t line_start = wgsl.rfind('\n', pos);
    size_t comment = wgsl.find("//", line_start == std::string_view::npos ? 0 : line_start);
    pos += 9;
    if (comment != std::string_view::npos && comment < pos) continue;  // in a comment
    KernelBinding b;
    b.index = uint32_t(std::strtoul(std::string(wgsl.substr(pos, 10)).c_str(), nullptr, 10));
    size_t var = wgsl.find("var<", pos);
    if (var == std::string_view::npos) break;
    std::string_view space = bracketed(wgsl, var + 3);
    b.uniform = space.rfind("uniform", 0) == 0;
    b.writable = space.find("read_write") != std::string_view::npos;
    size_t name = var + 3 + space.size() + 2;
    while (name < wgsl.size() && is_space(wgsl[name])) ++name;
    size_t colon = wgsl.find(':', name);
    if (colon == std::string_view::npos) break;
    size_t name_end = colon;
    while (name_end > name && is_space(wgsl[name_end - 1])) --name_end;
    b.name = std::string(wgsl.substr(name, name_end - name));
    size_t type = colon + 1;
    while (type < wgsl.size() && is_space(wgsl[type])) ++type;
    if (wgsl.compare(type, 6, "array<") == 0) {
      std::string_view inner = bracketed(wgsl, type + 5);
      // array<T> or array<T, N>: the element is what precedes a top-level comma.
      int depth = 0;
      size_t end = inner.size();
      for (size_t i = 0; i < inner.size(); ++i) {
        if (inner[i] == '<')
          ++depth;
        else if (inner[i] == '>')
          --depth;
        else if (inner[i] == ',' && depth == 0) {
          end = i;
          break;
        }
      }
      b.element = std::string(inner.substr(0, end));
    } else {
      size_t end = wgsl.find(';', type);
      b.element = std::string(wgsl.substr(type, end == std::string_view::npos ? 0 : end - type));
    }
    out.push_back(std::move(b));
    pos = colon;
  }
  return out;
}

const std::vector<KernelBinding>& Kernel::storage_bindings() const { return state->storage_bindings; }
const std::string& Kernel::entry() const { return state->entry; }

}  // namespace surfgrad::gpu
