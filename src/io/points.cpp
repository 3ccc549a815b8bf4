// The points of a map and their labels from .npy, .npz (one array), IDX (plain or gzip) or CSV: decoded on the
// host (so arrays larger than one GPU binding load), checked (finite points; labels integers
// 0..2^31-1), then uploaded in row blocks.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

#include "io/file_format.hpp"
#include "io/host_formats.hpp"
#include "io/input_limits.hpp"
#include "surfgrad/io.hpp"

namespace surfgrad {

namespace {

bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

enum class Source { Npy, Npz, Csv, Idx };

// The decoder for `path`. The magic bytes of .npy and zip (.npz) win over the name (a renamed
// file is still read); formats surfgrad does not read are named, whatever the file is called;
// then the name: .npy, .npz, .csv, else IDX (MNIST's, plain or gzip), which has no magic.
Source source_of(const std::string& path) {
  const std::string reads = "surfgrad reads .npy, .npz (one array), IDX (MNIST's, .gz too) and CSV (named .csv)";
  io::FileFormat f = io::sniff_format(path);
  if (f == io::FileFormat::Npy) return Source::Npy;
  if (f == io::FileFormat::Zip) return Source::Npz;
  if (f == io::FileFormat::Parquet || f == io::FileFormat::Hdf5 || f == io::FileFormat::Png)
    throw io::file_error(path, "this is " + io::format_name(f) + ", not a format surfgrad reads; " + reads +
                                   ": convert it (e.g. np.save('points.npy', array))");
  if (ends_with(path, ".npy")) return Source::Npy;
  if (ends_with(path, ".npz")) return Source::Npz;
  if (ends_with(path, ".csv")) return Source::Csv;
  if (f == io::FileFormat::Text)
    throw io::file_error(path,
                         "this is a text file, not IDX; " + reads + ": rename it to .csv if it is comma-separated");
  return Source::Idx;
}

// The one array of a .npy file or a .npz archive (an archive of several is refused, named).
io::NpyArray read_array(const std::string& path, Source source) {
  if (source == Source::Npy) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw io::file_error(path, "cannot open for reading (" + std::string(std::strerror(errno)) + ")");
    return io::decode_npy_host(in, path);
  }
  std::vector<char> zip = io::read_whole_file(path, ".npz");
  auto arrays = io::decode_npz_host(std::string_view(zip.data(), zip.size()), path);
  if (arrays.size() != 1) {
    std::string names;
    for (size_t i = 0; i < arrays.size() && i < 8; ++i) names += (i ? ", " : "") + arrays[i].first;
    throw io::file_error(path, "a .npz archive of " + std::to_string(arrays.size()) + " arrays" +
                                   (names.empty() ? "" : " (" + names + (arrays.size() > 8 ? ", …" : "") + ")") +
                                   "; surfgrad reads one array a file: save only that one (np.savez('x.npz', a)) "
                                   "or use .npy (np.save)");
  }
  return std::move(arrays[0].second);
}

double npy_element(const io::NpyArray& a, size_t i) {
  switch (a.dtype) {
    case DType::f32: {
      float f;
      std::memcpy(&f, a.data.data() + i * 4, 4);
      return f;
    }
    case DType::f16: {
      uint16_t h;
      std::memcpy(&h, a.data.data() + i * 2, 2);
      return half_to_float(h);
    }
    case DType::i32: {
      int32_t v;
      std::memcpy(&v, a.data.data() + i * 4, 4);
      return v;
    }
    case DType::u32: break;
  }
  uint32_t u;
  std::memcpy(&u, a.data.data() + i * 4, 4);
  return u;
}

// Every value of a file, in C order, as doubles (labels), with the file's leading dimension.
std::vector<double> read_values(const std::string& path, int64_t& rows) {
  std::vector<double> v;
  Source source = source_of(path);
  if (source == Source::Npy || source == Source::Npz) {
    io::NpyArray a = read_array(path, source);
    size_t n = size_t(io::checked_numel(a.shape, 8, path));
    io::check_host_budget(path, "shape " + io::dims_text(a.shape), uint64_t(n) * 8);
    v.resize(n);
    for (size_t i = 0; i < n; ++i) v[i] = npy_element(a, i);
    rows = a.shape.empty() ? 0 : a.shape[0];
  } else if (source == Source::Csv) {
    std::vector<char> text = io::read_whole_file(path, "CSV");
    io::check_host_budget(path, "a CSV file's numbers", uint64_t(text.size()) * 5);  // ≥ 2 bytes each, 8 as doubles
    io::CsvTable t = io::decode_csv(std::string_view(text.data(), text.size()), path);
    rows = t.rows;
    v = std::move(t.values);
  } else {
    IdxArray a = read_idx(path);
    rows = a.shape.empty() ? 0 : a.shape[0];
    v = std::move(a.values);
  }
  return v;
}

struct HostPoints {
  int64_t rows = 0, cols = 0;
  std::vector<char> f32;  // rows × cols floats, C order
};

HostPoints read_points(const std::string& path) {
  HostPoints p;
  if (Source source = source_of(path); source == Source::Npy || source == Source::Npz) {
    // f32 files (the common large case) go to the GPU without a converted copy.
    io::NpyArray a = read_array(path, source);
    if (a.shape.empty()) throw Error(ErrorKind::Shape, "'" + path + "': a 0-d array is not a set of points");
    size_t count = size_t(io::checked_numel(a.shape, 4, path));
    p.rows = a.shape[0];
    p.cols = p.rows == 0 ? 0 : int64_t(count) / p.rows;
    if (a.dtype == DType::f32) {
      p.f32 = std::move(a.data);
    } else {
      io::check_host_budget(path, "shape " + io::dims_text(a.shape) + " of " + a.descr, a.data.size() + count * 4);
      p.f32.resize(count * 4);
      for (size_t i = 0; i < count; ++i) {
        float f = io::narrow_to_float(npy_element(a, i));
        std::memcpy(p.f32.data() + i * 4, &f, 4);
      }
    }
  } else {
    std::vector<double> v = read_values(path, p.rows);
    p.cols = p.rows == 0 ? 0 : int64_t(v.size()) / p.rows;
    p.f32.resize(v.size() * 4);
    for (size_t i = 0; i < v.size(); ++i) {
      float f = io::narrow_to_float(v[i]);
      std::memcpy(p.f32.data() + i * 4, &f, 4);
    }
  }
  if (p.rows == 0 || p.cols == 0) throw io::file_error(path, "no points in the file");
  for (size_t i = 0; i < p.f32.size() / 4; ++i) {
    float f;
    std::memcpy(&f, p.f32.data() + i * 4, 4);
    if (!std::isfinite(f))
      throw Error(ErrorKind::Value, "'" + path + "': point " + std::to_string(i / size_t(p.cols)) +
                                        " has a NaN or infinite value (or one beyond f32's range); surfgrad maps "
                                        "finite numbers only (drop or impute that point)");
  }
  return p;
}

}  // namespace

PointBlocks load_point_blocks(const gpu::ContextPtr& ctx, const std::string& path, uint64_t max_block_bytes) {
  HostPoints p = io::host_memory_guard(path, [&] { return read_points(path); });
  if (max_block_bytes == 0) max_block_bytes = ctx->limits().max_storage_buffer_binding_size / 4;
  int64_t rows = std::max<int64_t>(1, int64_t(max_block_bytes / (uint64_t(p.cols) * 4)));
  PointBlocks out;
  for (int64_t r0 = 0; r0 < p.rows; r0 += rows) {
    int64_t r1 = std::min(p.rows, r0 + rows);
    try {
      out.blocks.push_back(
          Tensor::from_host(ctx, p.f32.data() + size_t(r0 * p.cols) * 4, {r1 - r0, p.cols}, DType::f32));
    } catch (const Error& e) {
      throw Error(e.kind(), "'" + path + "': rows " + std::to_string(r0) + "–" + std::to_string(r1) + " of " +
                                std::to_string(p.rows) + " × " + std::to_string(p.cols) + ": " + e.message());
    }
  }
  return out;
}

Tensor load_points(const gpu::ContextPtr& ctx, const std::string& path) {
  return load_point_blocks(ctx, path).single();
}

std::vector<int32_t> labels_from_values(const std::vector<double>& values, const std::string& file) {
  std::vector<int32_t> labels(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    double x = values[i];
    if (!(x >= 0 && x <= double(std::numeric_limits<int32_t>::max()) && x == std::floor(x))) {
      char shown[64];
      std::snprintf(shown, sizeof shown, "%.17g", x);
      throw Error(ErrorKind::Value, "'" + file + "': label " + std::to_string(i) + " is " + shown +
                                        "; labels must be integers from 0 to 2147483647 (class numbers)");
    }
    labels[i] = int32_t(x);
  }
  return labels;
}

Tensor load_labels(const gpu::ContextPtr& ctx, const std::string& path, int64_t n) {
  int64_t rows = 0;
  std::vector<double> v = io::host_memory_guard(path, [&] { return read_values(path, rows); });
  if (int64_t(v.size()) != n)
    throw Error(ErrorKind::Shape, "'" + path + "': " + std::to_string(v.size()) + " labels for " + std::to_string(n) +
                                      " points; give one label per point, in the points' order");
  std::vector<int32_t> labels = labels_from_values(v, path);
  return Tensor::from_vector(ctx, labels, {n});
}

}  // namespace surfgrad
