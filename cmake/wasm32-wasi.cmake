# Toolchain for the browser target: Debian's clang-19 and lld-19 for wasm32-wasi (libc++ and
# wasi-libc from Debian's wasm32 packages), with WebAssembly exception handling so the library's
# C++ exceptions work as natively. scripts/build_web.sh passes SURFGRAD_WASM_EH_RUNTIME: the
# C++ ABI and unwinder built with -fwasm-exceptions by scripts/setup_web.sh (Debian's wasm32
# libc++abi is built without exception support).
set(CMAKE_SYSTEM_NAME WASI)
set(CMAKE_SYSTEM_PROCESSOR wasm32)
set(CMAKE_C_COMPILER clang-19)
set(CMAKE_CXX_COMPILER clang++-19)
set(CMAKE_C_COMPILER_TARGET wasm32-wasi)
set(CMAKE_CXX_COMPILER_TARGET wasm32-wasi)
set(CMAKE_SYSROOT /usr)
set(CMAKE_AR /usr/bin/llvm-ar-19)
set(CMAKE_RANLIB /usr/bin/llvm-ranlib-19)
set(CMAKE_EXECUTABLE_SUFFIX .wasm)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(wasm_flags "-fwasm-exceptions -isystem /usr/lib/llvm-19/include/wasm32-wasi/c++/v1")
set(CMAKE_C_FLAGS_INIT "-fwasm-exceptions")
set(CMAKE_CXX_FLAGS_INIT "${wasm_flags}")
# Header-only packages (nlohmann-json) are found in the host's /usr/include.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
