// .npy files (NumPy format versions 1–3): f32, f16, f64 (→ f32), i32, u32, u8 (→ u32), in C or
// Fortran order. Anything else is refused with a message naming the file and what was found.
#include <cstring>
#include <fstream>
#include <regex>

#include "surfgrad/io.hpp"
#include "internal.hpp"

namespace surfgrad {

namespace {

Error npy_error(const std::string& path, const std::string& what) {
  return Error(ErrorKind::IO, "'" + path + "': " + what);
}

std::string header_field(const std::string& header, const std::string& key, const std::string& path) {
  std::regex re("['\"]" + key + "['\"]\\s*:\\s*(\\([^)]*\\)|'[^']*'|\"[^\"]*\"|True|False)");
  std::smatch m;
  if (!std::regex_search(header, m, re)) throw npy_error(path, "the .npy header has no '" + key + "' field: " + header);
  return m[1];
}

}  // namespace

Tensor load_npy(const gpu::ContextPtr& ctx, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw npy_error(path, "cannot open for reading (" + std::string(std::strerror(errno)) + ")");
  return decode_npy(ctx, in, path);
}

Tensor decode_npy(const gpu::ContextPtr& ctx, std::istream& in, const std::string& path) {
  NpyHost h = decode_npy_host(in, path);
  if (!h.fortran) return Tensor::from_host(ctx, h.data.data(), h.shape, h.dtype);
  // Fortran order is C order of the reversed shape; transpose back on the GPU.
  Shape reversed(h.shape.rbegin(), h.shape.rend());
  Tensor t = Tensor::from_host(ctx, h.data.data(), reversed, h.dtype);
  std::vector<int> axes;
  for (int d = int(h.shape.size()) - 1; d >= 0; --d) axes.push_back(d);
  return t.permute(axes).contiguous();
}

NpyHost decode_npy_host(std::istream& in, const std::string& path) {
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    throw npy_error(path, "not a .npy file (bad magic; expected \\x93NUMPY)");
  uint8_t major = uint8_t(magic[6]);
  uint32_t header_len = 0;
  if (major == 1) {
    uint8_t b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) throw npy_error(path, "truncated .npy header");
    header_len = b[0] | (uint32_t(b[1]) << 8);
  } else if (major == 2 || major == 3) {
    uint8_t b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) throw npy_error(path, "truncated .npy header");
    header_len = b[0] | (uint32_t(b[1]) << 8) | (uint32_t(b[2]) << 16) | (uint32_t(b[3]) << 24);
  } else {
    throw npy_error(path, ".npy format version " + std::to_string(major) + " is not supported (1, 2, 3 are)");
  }
  if (header_len > (1u << 20)) throw npy_error(path, "implausible .npy header length " + std::to_string(header_len));
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) throw npy_error(path, "truncated .npy header");

  std::string descr = header_field(header, "descr", path);
  descr = descr.substr(1, descr.size() - 2);
  bool fortran = header_field(header, "fortran_order", path) == "True";
  std::string shape_text = header_field(header, "shape", path);
  Shape shape;
  std::regex num("\\d+");
  for (auto it = std::sregex_iterator(shape_text.begin(), shape_text.end(), num); it != std::sregex_iterator(); ++it)
    shape.push_back(std::stoll(it->str()));
  if (shape.size() > kMaxRank)
    throw npy_error(path, "rank " + std::to_string(shape.size()) + " array; surfgrad supports rank ≤ 8");

  struct Kind {
    const char* descr;
    size_t size;
    DType dtype;
  };
  static const Kind kinds[] = {{"<f4", 4, DType::f32}, {"<f2", 2, DType::f16}, {"<f8", 8, DType::f32},
                               {"<i4", 4, DType::i32}, {"<u4", 4, DType::u32}, {"|u1", 1, DType::u32},
                               {"<u1", 1, DType::u32}, {"|i1", 1, DType::i32}};
  const Kind* kind = nullptr;
  for (const Kind& k : kinds)
    if (descr == k.descr) kind = &k;
  if (!kind)
    throw npy_error(path, "dtype '" + descr +
                              "' is not supported; surfgrad reads <f4, <f2, <f8 (as f32), <i4, <u4, |u1 and |i1 "
                              "(convert with numpy's astype, e.g. astype('<f4'))");
  int64_t n = shape_numel(shape);
  std::vector<char> raw(size_t(n) * kind->size);
  if (!in.read(raw.data(), std::streamsize(raw.size())))
    throw npy_error(path, "truncated data: expected " + std::to_string(raw.size()) + " bytes for shape " +
                              shape_str(shape) + " of " + descr + ", the file ends after " +
                              std::to_string(in.gcount()) + " bytes");

  // Convert to the tensor dtype on the host.
  std::vector<char> data;
  if (descr == "<f8") {
    std::vector<float> f(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      double d;
      std::memcpy(&d, raw.data() + i * 8, 8);
      f[size_t(i)] = float(d);
    }
    data.assign(reinterpret_cast<char*>(f.data()), reinterpret_cast<char*>(f.data() + n));
  } else if (kind->size == 1) {
    std::vector<uint32_t> u(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      u[size_t(i)] = descr == "|i1" ? uint32_t(int32_t(int8_t(raw[size_t(i)]))) : uint8_t(raw[size_t(i)]);
    data.assign(reinterpret_cast<char*>(u.data()), reinterpret_cast<char*>(u.data() + n));
  } else {
    data = std::move(raw);
  }
  return NpyHost{shape, kind->dtype, std::move(data), fortran};
}

std::string encode_npy(const Tensor& t) {
  const char* descr = t.dtype() == DType::f32 ? "<f4" : t.dtype() == DType::f16 ? "<f2" : t.dtype() == DType::i32 ? "<i4" : "<u4";
  std::string shape = "(";
  for (int64_t d : t.shape()) shape += std::to_string(d) + ", ";
  if (t.rank() > 1) shape.resize(shape.size() - 1), shape.back() = ')';
  else if (t.rank() == 1) shape.pop_back(), shape += ")";  // "(n,)"
  else shape += ")";
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(1);
  out += char(0);
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  out += header;
  size_t at = out.size();
  out.resize(at + size_t(t.numel()) * dtype_size(t.dtype()));
  t.to_host(out.data() + at);
  return out;
}

void save_npy(const Tensor& t, const std::string& path) {
  std::string bytes = encode_npy(t);
  std::ofstream out(path, std::ios::binary);
  if (!out) throw npy_error(path, "cannot open for writing (" + std::string(std::strerror(errno)) + ")");
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw npy_error(path, "write failed (disk full?)");
}

}  // namespace surfgrad
