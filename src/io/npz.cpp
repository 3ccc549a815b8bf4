// .npz archives as tensors: the host decoder (npz_format.cpp) plus one upload per array.
#include <cerrno>
#include <cstring>
#include <fstream>

#include "io/host_formats.hpp"
#include "io/input_limits.hpp"
#include "io/write_file.hpp"
#include "surfgrad/io.hpp"

namespace surfgrad {

void save_npz(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& arrays) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& [name, tensor] : arrays) files.emplace_back(name + ".npy", encode_npy(tensor));
  io::write_whole_file(path, io::encode_zip(files, path));
}

std::vector<std::pair<std::string, Tensor>> load_npz(const gpu::ContextPtr& ctx, const std::string& path) {
  auto arrays = io::host_memory_guard(path, [&] {
    std::vector<char> zip = io::read_whole_file(path, ".npz");
    return io::decode_npz_host(std::string_view(zip.data(), zip.size()), path);
  });
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& [name, array] : arrays) {
    try {
      out.emplace_back(name, Tensor::from_host(ctx, array.data.data(), array.shape, array.dtype));
    } catch (const Error& e) {
      throw Error(e.kind(), "'" + path + ":" + name + "': " + e.message());
    }
  }
  return out;
}

}  // namespace surfgrad
