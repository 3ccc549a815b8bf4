// surfgrad's kernels are written in the WGSL dialect naga (wgpu-native) accepts; Dawn's Tint
// wants the standard one. The two differences met so far, fixed here for Dawn in one place
// instead of in every kernel:
//  - naga rejects `enable subgroups;` and enables subgroup builtins through the device feature;
//    Tint requires the directive. Added where the source uses a subgroup builtin.
//  - `enable` directives must precede every declaration; generated kernels that need one
//    (the subgroup-matrix matmul) write it into their body, after the shared code. Hoisted.
#include <regex>

#include "impl.hpp"

namespace surfgrad::gpu {

std::string dawn_wgsl(const std::string& wgsl) {
  std::string head, body;
  bool has_subgroups = false;
  size_t at = 0;
  while (at < wgsl.size()) {
    size_t end = wgsl.find('\n', at);
    if (end == std::string::npos) end = wgsl.size();
    std::string line = wgsl.substr(at, end - at);
    size_t first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line.compare(first, 7, "enable ") == 0) {
      has_subgroups |= line.find("subgroups") != std::string::npos;
      if (head.find(line.substr(first)) == std::string::npos) head += line.substr(first) + "\n";
    } else {
      body += line + "\n";
    }
    at = end + 1;
  }
  static const std::regex uses_subgroups(R"(\bsubgroup[A-Z]\w*\s*\(|\bsubgroup_(size|invocation_id|id)\b)");
  if (!has_subgroups && std::regex_search(body, uses_subgroups)) head = "enable subgroups;\n" + head;
  return head + body;
}

}  // namespace surfgrad::gpu
