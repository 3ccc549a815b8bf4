// surfgrad's one exception family. Every message names the op, the offending shapes, dtypes,
// sizes or file, and what the caller can do about it.
//   try { a.matmul(b); } catch (const surfgrad::Error& e) { if (e.kind() == ErrorKind::Shape) ... }
#pragma once
#include <stdexcept>
#include <string>

namespace surfgrad {

enum class ErrorKind {
  Shape,          // incompatible or invalid shapes, axes, ranks
  DType,          // unsupported or mismatched element types
  Value,          // an argument out of its valid range
  Index,          // an index out of bounds (detected on the GPU, reported at the next sync)
  OutOfMemory,    // the device could not allocate
  LimitExceeded,  // larger than the adapter allows (binding size, buffer size)
  Unsupported,    // the adapter lacks a feature (e.g. shader-f16)
  ShaderCompile,  // WGSL rejected by the implementation
  DeviceLost,     // the device is gone; every later call fails with this
  Device,         // any other error reported by the WebGPU implementation
  IO,             // file reading and writing, file formats
  Cancelled,      // the caller's progress callback asked to stop
};

const char* to_string(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message)
      : std::runtime_error(std::string(to_string(kind)) + " error: " + message), kind_(kind), message_(message) {}
  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }  // what() without the kind prefix

 private:
  ErrorKind kind_;
  std::string message_;
};

}  // namespace surfgrad
