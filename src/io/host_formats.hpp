// Private to src/io: the host-side halves of the readers. Each decodes bytes (or a stream) into
// host arrays, checking every size against the input's real size and the host's memory before
// allocating, and never touches the GPU: the fuzz targets (tests/fuzz/) build these alone.
#pragma once
#include <cstdint>
#include <istream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "surfgrad/io.hpp"

namespace surfgrad::io {

// ---- .npy ----
// An array in C order, converted to the dtype a tensor gives it (f64 → f32, u8/bool → u32,
// i8 → i32, i8/u8-wide integers range-checked into i32/u32), Fortran order transposed.
struct NpyArray {
  Shape shape;
  DType dtype = DType::f32;
  std::vector<char> data;
  std::string descr;  // the file's dtype, e.g. "<f8"
};
NpyArray decode_npy_host(std::istream& in, const std::string& name);
// The header (magic, version, dict, padding) of a C-order array of `shape` and `dtype`.
std::string encode_npy_header(const Shape& shape, DType dtype);

// ---- .npz (zip) ----
// Entries of an archive (stored or deflated), names without ".npy", CRC-checked.
std::vector<std::pair<std::string, NpyArray>> decode_npz_host(std::string_view zip, const std::string& name);
// A zip archive of stored (uncompressed) files, as np.savez writes.
std::string encode_zip(const std::vector<std::pair<std::string, std::string>>& files, const std::string& name);

// ---- IDX (plain or gzip) ----
IdxArray decode_idx(std::string_view bytes, const std::string& name);

// ---- CSV ----
// Numbers separated by commas, one row per line; an optional header line (a first line with no
// number in it). Every field must be a whole decimal number: no trailing junk, hex, NaN or inf.
struct CsvTable {
  int64_t rows = 0, cols = 0;
  std::vector<double> values;  // row-major
};
CsvTable decode_csv(std::string_view text, const std::string& name);

// f64 → f32 as IEEE does it (±inf past the range), without the undefined behaviour C++ gives it.
float narrow_to_float(double d);

}  // namespace surfgrad::io
