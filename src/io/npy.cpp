// .npy files as tensors: the host decoder (npy_format.cpp) plus one upload, and the reverse.
#include <cerrno>
#include <cstring>
#include <fstream>

#include "io/host_formats.hpp"
#include "io/input_limits.hpp"
#include "io/write_file.hpp"
#include "surfgrad/io.hpp"

namespace surfgrad {

namespace {

// The adapter's limits apply where the tensor is made: name the file and the way around them.
Tensor upload(const gpu::ContextPtr& ctx, const io::NpyArray& a, const std::string& name) {
  try {
    return Tensor::from_host(ctx, a.data.data(), a.shape, a.dtype);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::LimitExceeded && e.kind() != ErrorKind::OutOfMemory) throw;
    throw Error(e.kind(), "'" + name + "': " + e.message() +
                              " (point sets larger than one GPU buffer load in row blocks: load_point_blocks, or "
                              "surfgrad map)");
  }
}

}  // namespace

Tensor decode_npy(const gpu::ContextPtr& ctx, std::istream& in, const std::string& name) {
  return upload(ctx, io::host_memory_guard(name, [&] { return io::decode_npy_host(in, name); }), name);
}

Tensor load_npy(const gpu::ContextPtr& ctx, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw io::file_error(path, "cannot open for reading (" + std::string(std::strerror(errno)) + ")");
  return decode_npy(ctx, in, path);
}

std::string encode_npy(const Tensor& t) {
  std::string out = io::encode_npy_header(t.shape(), t.dtype());
  size_t at = out.size();
  out.resize(at + size_t(t.numel()) * dtype_size(t.dtype()));
  t.to_host(out.data() + at);
  return out;
}

void save_npy(const Tensor& t, const std::string& path) { io::write_whole_file(path, encode_npy(t)); }

}  // namespace surfgrad
