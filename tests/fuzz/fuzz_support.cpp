// The one library symbol the host decoders need beyond src/io: Error's kind names live in
// src/gpu/context.cpp, which the fuzz targets do not build (no WebGPU in them).
#include "surfgrad/error.hpp"

namespace surfgrad {
const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::IO: return "I/O";
    case ErrorKind::LimitExceeded: return "limit exceeded";
    default: return "surfgrad";
  }
}
}  // namespace surfgrad
