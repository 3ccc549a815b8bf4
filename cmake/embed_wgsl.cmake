# Turns every .wgsl file under KERNEL_DIR into one C++ source that maps file name → text.
# Run as: cmake -DKERNEL_DIR=... -DOUTPUT=... -P embed_wgsl.cmake
file(GLOB files RELATIVE "${KERNEL_DIR}" "${KERNEL_DIR}/*.wgsl")
list(SORT files)
set(body "")
foreach(f ${files})
  file(READ "${KERNEL_DIR}/${f}" text)
  string(APPEND body "    {\"${f}\", R\"wgsl__(${text})wgsl__\"},\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "// Generated from src/kernels/*.wgsl by cmake/embed_wgsl.cmake; do not edit.
#include <map>
#include <string>
#include <string_view>
#include \"surfgrad/error.hpp\"
namespace surfgrad::kernels {
std::string_view wgsl_source(std::string_view name) {
  static const std::map<std::string_view, std::string_view> sources = {
${body}  };
  auto it = sources.find(name);
  if (it == sources.end()) throw Error(ErrorKind::Value, \"no embedded kernel named \" + std::string(name));
  return it->second;
}
}  // namespace surfgrad::kernels
")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
