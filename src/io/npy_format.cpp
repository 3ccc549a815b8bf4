// .npy on the host (NumPy format versions 1–3): the header is parsed as the small Python dict
// literal it is (no regex: a hostile 1 MiB header must not recurse), every dimension is checked
// for sign and overflow, and the declared data size is compared with what the stream holds and
// with the host's memory before anything is allocated.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "io/host_formats.hpp"
#include "io/input_limits.hpp"

namespace surfgrad::io {

namespace {

constexpr uint32_t kMaxHeaderBytes = 1u << 20;  // NumPy's own headers are < 64 KiB

enum class Convert { Copy, F64, U8, I8, I64, U64 };
struct NpyType {
  const char* descr;
  uint32_t size;
  DType dtype;
  Convert convert;
};
constexpr NpyType kTypes[] = {
    {"<f4", 4, DType::f32, Convert::Copy}, {"<f2", 2, DType::f16, Convert::Copy}, {"<f8", 8, DType::f32, Convert::F64},
    {"<i4", 4, DType::i32, Convert::Copy}, {"<u4", 4, DType::u32, Convert::Copy}, {"|u1", 1, DType::u32, Convert::U8},
    {"<u1", 1, DType::u32, Convert::U8},   {"|b1", 1, DType::u32, Convert::U8},   {"|i1", 1, DType::i32, Convert::I8},
    {"<i1", 1, DType::i32, Convert::I8},   {"<i8", 8, DType::i32, Convert::I64},  {"<u8", 8, DType::u32, Convert::U64},
};

struct NpyHeader {
  std::string descr;
  bool fortran = false;
  Shape shape;
};

// The header dict: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } plus padding.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& file) : s_(text), file_(file) {}

  NpyHeader parse() {
    NpyHeader h;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    skip_space();
    expect('{');
    for (;;) {
      skip_space();
      if (peek() == '}') break;
      std::string key = quoted();
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr" && !seen_descr) {
        if (peek() == '[')
          throw file_error(file_, "structured dtype " + excerpt() + " is not supported; save a plain array");
        h.descr = quoted(), seen_descr = true;
      } else if (key == "fortran_order" && !seen_fortran) {
        h.fortran = boolean(), seen_fortran = true;
      } else if (key == "shape" && !seen_shape) {
        h.shape = shape(), seen_shape = true;
      } else {
        fail("unexpected or repeated key '" + key + "'");
      }
      end_of_item('}');
    }
    ++at_;
    skip_space();
    if (at_ != s_.size()) fail("text after the closing '}'");
    if (!seen_descr) fail("the header has no 'descr' field");
    if (!seen_fortran) fail("the header has no 'fortran_order' field");
    if (!seen_shape) fail("the header has no 'shape' field");
    return h;
  }

 private:
  std::string_view s_;
  const std::string& file_;
  size_t at_ = 0;

  char peek() const { return at_ < s_.size() ? s_[at_] : '\0'; }
  // After an item of a dict or tuple: a ',' (consumed) or the closing bracket (left for the caller).
  void end_of_item(char close) {
    skip_space();
    if (peek() == ',')
      ++at_;
    else if (peek() != close)
      fail(std::string("expected ',' or '") + close + "'");
  }
  void skip_space() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\n' || s_[at_] == '\t' || s_[at_] == '\r')) ++at_;
  }
  std::string excerpt() const {
    std::string e(s_.substr(at_, 40));
    for (char& c : e)
      if (uint8_t(c) < 0x20 || uint8_t(c) > 0x7e) c = '?';
    return "'" + e + "'";
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw file_error(file_, "malformed .npy header: " + what + " at character " + std::to_string(at_) + " (" +
                                excerpt() + "); the file is corrupt or not written by NumPy");
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  std::string quoted() {
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    size_t end = s_.find(q, at_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(at_ + 1, end - at_ - 1));
    at_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.substr(at_, 4) == "True") return at_ += 4, true;
    if (s_.substr(at_, 5) == "False") return at_ += 5, false;
    fail("expected True or False");
  }
  Shape shape() {
    expect('(');
    Shape dims;
    std::string text = "(";
    for (;;) {
      skip_space();
      if (peek() == ')') break;
      bool negative = peek() == '-';
      if (negative) ++at_;
      if (!std::isdigit(uint8_t(peek()))) fail("expected a dimension");
      size_t start = at_;
      uint64_t v = 0;
      bool too_big = false;
      while (std::isdigit(uint8_t(peek()))) {
        too_big = too_big || __builtin_mul_overflow(v, 10, &v) ||
                  __builtin_add_overflow(v, uint64_t(peek() - '0'), &v) ||
                  v > uint64_t(std::numeric_limits<int64_t>::max());
        ++at_;
      }
      std::string digits(s_.substr(start, at_ - start));
      if (peek() == 'L') ++at_;  // Python 2's long literals
      text += (dims.empty() ? "" : ", ") + std::string(negative ? "-" : "") + digits;
      if (negative)
        throw file_error(file_, "the .npy header declares a negative dimension -" + digits + " in shape " + text +
                                    "...); the file is corrupt");
      if (too_big)
        throw Error(ErrorKind::LimitExceeded, "'" + file_ + "': the .npy header declares dimension " + digits +
                                                  " in shape " + text +
                                                  "...), larger than 2^63 - 1; no array that "
                                                  "large can be read (the file is corrupt)");
      dims.push_back(int64_t(v));
      if (dims.size() > size_t(kMaxRank))
        throw file_error(file_, "the .npy array has rank over " + std::to_string(kMaxRank) + " (shape " + text +
                                    "...); surfgrad supports rank ≤ 8: reshape it before saving");
      end_of_item(')');
    }
    ++at_;
    return dims;
  }
};

uint32_t read_le(const uint8_t* b, int n) {
  uint32_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | b[k];
  return v;
}

// Fortran order (column-major: element i at sum i_j * prod(shape[:j])): gather it into C order.
std::vector<char> fortran_to_c(const std::vector<char>& src, const Shape& shape, size_t element) {
  std::vector<char> dst(src.size());
  size_t rank = shape.size(), n = src.size() / std::max<size_t>(element, 1);
  if (n == 0) return dst;
  std::vector<int64_t> index(rank, 0), fstride(rank, 1);
  for (size_t j = 1; j < rank; ++j) fstride[j] = fstride[j - 1] * shape[j - 1];
  int64_t from = 0;
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(dst.data() + i * element, src.data() + size_t(from) * element, element);
    for (size_t j = rank; j-- > 0;) {  // C-order odometer over the output
      if (++index[j] < shape[j]) {
        from += fstride[j];
        break;
      }
      from -= (index[j] - 1) * fstride[j];
      index[j] = 0;
    }
  }
  return dst;
}

template <typename To, typename From>
void convert(std::vector<char>& data, size_t n, const std::string& file, const std::string& descr) {
  std::vector<char> out(n * sizeof(To));
  for (size_t i = 0; i < n; ++i) {
    From v;
    std::memcpy(&v, data.data() + i * sizeof(From), sizeof(From));
    To t;
    if constexpr (std::is_same_v<To, float>) {
      t = narrow_to_float(double(v));
    } else {
      if (!std::in_range<To>(v))
        throw Error(ErrorKind::DType, "'" + file + "': element " + std::to_string(i) + " of the " + descr +
                                          " array is " + std::to_string(v) + ", outside " +
                                          (std::is_signed_v<To> ? "int32" : "uint32") +
                                          "; surfgrad's integers are 32-bit (convert with astype)");
      t = To(v);
    }
    std::memcpy(out.data() + i * sizeof(To), &t, sizeof(To));
  }
  data = std::move(out);
}

}  // namespace

float narrow_to_float(double d) {
  constexpr double kMax = double(std::numeric_limits<float>::max());
  if (d > kMax) return std::numeric_limits<float>::infinity();  // NaN compares false: kept below
  if (d < -kMax) return -std::numeric_limits<float>::infinity();
  return float(d);
}

NpyArray decode_npy_host(std::istream& in, const std::string& name) {
  uint8_t magic[8];
  if (!in.read(reinterpret_cast<char*>(magic), 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    throw file_error(name, "not a .npy file (bad magic; expected \\x93NUMPY)");
  uint8_t major = magic[6];
  int len_bytes = major == 1 ? 2 : major == 2 || major == 3 ? 4 : 0;
  if (!len_bytes)
    throw file_error(name, ".npy format version " + std::to_string(major) + " is not supported (1, 2, 3 are)");
  uint8_t len[4];
  if (!in.read(reinterpret_cast<char*>(len), len_bytes)) throw file_error(name, "truncated .npy header");
  uint32_t header_len = read_le(len, len_bytes);
  if (header_len > kMaxHeaderBytes)
    throw file_error(name, "implausible .npy header length " + std::to_string(header_len) + " (NumPy's are < 64 KiB)");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len))
    throw file_error(name, "truncated .npy header (" + std::to_string(header_len) + " bytes declared)");
  NpyHeader h = HeaderParser(header, name).parse();

  const NpyType* type = nullptr;
  for (const NpyType& t : kTypes)
    if (h.descr == t.descr) type = &t;
  if (!type)
    throw file_error(name,
                     "dtype '" + h.descr +
                         "' is not supported; surfgrad reads <f4, <f2, <f8 (as f32), <i4, <u4, <i8/<u8 (range-checked "
                         "into 32 bits), |u1, |i1 and |b1 (convert with numpy's astype, e.g. astype('<f4'))");
  std::string what = "shape " + dims_text(h.shape) + " of " + h.descr;
  // Bounded for the converted copy (4 bytes an element) too, so the sums below cannot wrap.
  int64_t n = checked_numel(h.shape, std::max<uint32_t>(type->size, 4), name);
  uint64_t bytes = uint64_t(n) * type->size;
  if (std::optional<uint64_t> left = remaining_bytes(in); left && *left < bytes)
    throw file_error(name, "truncated data: " + what + " needs " + std::to_string(bytes) + " bytes, the file holds " +
                               std::to_string(*left) + " after its header (an incomplete copy, or a corrupt header)");
  // Conversions and Fortran order hold the raw and the converted array at once.
  uint64_t converted = uint64_t(n) * (type->convert == Convert::Copy ? type->size : 4);
  bool reorder = h.fortran && h.shape.size() > 1;
  check_host_budget(name, what, bytes + (type->convert != Convert::Copy || reorder ? converted : 0));

  NpyArray out{h.shape, type->dtype, {}, h.descr};
  uint64_t got = read_exactly(in, bytes, out.data);
  if (got < bytes)
    throw file_error(name, "truncated data: " + what + " needs " + std::to_string(bytes) +
                               " bytes, the file ends after " + std::to_string(got));
  size_t count = size_t(n);
  switch (type->convert) {
    case Convert::Copy: break;
    case Convert::F64: convert<float, double>(out.data, count, name, h.descr); break;
    case Convert::U8: convert<uint32_t, uint8_t>(out.data, count, name, h.descr); break;
    case Convert::I8: convert<int32_t, int8_t>(out.data, count, name, h.descr); break;
    case Convert::I64: convert<int32_t, int64_t>(out.data, count, name, h.descr); break;
    case Convert::U64: convert<uint32_t, uint64_t>(out.data, count, name, h.descr); break;
  }
  if (reorder) {
    out.data = fortran_to_c(out.data, h.shape, out.data.size() / std::max<size_t>(count, 1));
  }
  return out;
}

std::string encode_npy_header(const Shape& shape, DType dtype) {
  const char* descr = dtype == DType::f32 ? "<f4" : dtype == DType::f16 ? "<f2" : dtype == DType::i32 ? "<i4" : "<u4";
  std::string dims = "(";
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  dims += shape.size() == 1 ? ",)" : ")";  // "(n,)" is a 1-tuple
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': " + dims + ", }";
  size_t total = 10 + header.size() + 1;  // aligned to 64 bytes, as NumPy does
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(1);
  out += char(0);
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  return out + header;
}

}  // namespace surfgrad::io
