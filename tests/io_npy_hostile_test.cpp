// Hostile and unusual .npy / .npz files: each ends in the documented surfgrad::Error (IO for a
// malformed file, LimitExceeded for one too large), naming the file, without a giant allocation.
#include <zlib.h>

#include <filesystem>
#include <sstream>

#include "io_test_util.hpp"
#include "surfgrad/io.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

void expect_npy_error(ErrorKind kind, const std::string& name, const std::string& dict, const std::string& data,
                      const std::string& needle) {
  std::string path = write_bytes(name, npy_file(dict, data));
  expect_error(kind, path, needle, [&] { load_npy(ctx(), path); });
}

std::string floats(std::initializer_list<float> v) {
  std::string s;
  for (float f : v) s.append(reinterpret_cast<const char*>(&f), 4);
  return s;
}

// A stream that cannot seek: the reader cannot know the size in advance.
class UnseekableBuf : public std::streambuf {
 public:
  explicit UnseekableBuf(std::string bytes) : bytes_(std::move(bytes)) {
    setg(bytes_.data(), bytes_.data(), bytes_.data() + bytes_.size());
  }

 private:
  std::string bytes_;
};

}  // namespace

TEST(NpyHostile, HugeDeclaredShapesFailBeforeAllocating) {
  // 2^40 × 768 f32 in a 64-byte file: the size fits 64 bits, the file does not hold it.
  expect_npy_error(ErrorKind::IO, "huge1.npy", npy_dict("<f4", "(1099511627776, 768)"), std::string(64, 'x'),
                   "[1099511627776, 768]");
  // A dimension past 2^63 cannot even be represented.
  expect_npy_error(ErrorKind::LimitExceeded, "huge2.npy", npy_dict("<f4", "(1000000000000000000000000000000, 2)"), "",
                   "1000000000000000000000000000000");
  // (1000000, 768) declared, 64 bytes present: refused without allocating 3 GB.
  expect_npy_error(ErrorKind::IO, "lying.npy", npy_dict("<f4", "(1000000, 768)"), std::string(64, 'x'), "truncated");
  // The product overflows 64 bits.
  expect_npy_error(ErrorKind::LimitExceeded, "overflow.npy",
                   npy_dict("<f4", "(4611686018427387904, 4611686018427387904)"), "", "overflows 64 bits");
  // Empty, but its strides would overflow.
  expect_npy_error(ErrorKind::LimitExceeded, "empty_overflow.npy",
                   npy_dict("<f4", "(0, 4611686018427387904, 4611686018427387904)"), "", "too large");
  // Near 2^63 elements of 8 bytes: the byte count overflows even though the count does not.
  expect_npy_error(ErrorKind::LimitExceeded, "bytes_overflow.npy", npy_dict("<f8", "(2305843009213693952,)"), "",
                   "too large");
}

TEST(NpyHostile, NegativeAndMalformedShapes) {
  expect_npy_error(ErrorKind::IO, "negative.npy", npy_dict("<f4", "(-3, 2)"), floats({1, 2, 3, 4, 5, 6}), "negative");
  expect_npy_error(ErrorKind::IO, "negative2.npy", npy_dict("<f4", "(3, -2)"), floats({1, 2, 3, 4, 5, 6}), "-2");
  expect_npy_error(ErrorKind::IO, "rank9.npy", npy_dict("<f4", "(1, 1, 1, 1, 1, 1, 1, 1, 1)"), floats({1}), "rank");
  expect_npy_error(ErrorKind::IO, "shape_list.npy", npy_dict("<f4", "[2, 3]"), floats({1}), "malformed");
  expect_npy_error(ErrorKind::IO, "shape_text.npy", npy_dict("<f4", "(2, x)"), floats({1}), "malformed");
  expect_npy_error(ErrorKind::IO, "shape_float.npy", npy_dict("<f4", "(2.5,)"), floats({1}), "malformed");
  expect_npy_error(ErrorKind::IO, "no_brace.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", floats({1}),
                   "malformed");
  expect_npy_error(ErrorKind::IO, "repeated.npy",
                   "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", floats({1}), "repeated");
  expect_npy_error(ErrorKind::IO, "extra_key.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}",
                   floats({1}), "unexpected");
  expect_npy_error(ErrorKind::IO, "no_fortran.npy", "{'descr': '<f4', 'shape': (1,)}", floats({1}), "fortran_order");
  expect_npy_error(ErrorKind::IO, "bad_bool.npy", "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", floats({1}),
                   "True or False");
  expect_npy_error(ErrorKind::IO, "unterminated.npy", "{'descr': '<f4", "", "unterminated");
}

TEST(NpyHostile, WrongDtypeStrings) {
  for (const char* descr : {"<c8", ">f4", "float32", "<f4 ", "", "<U10", "|O", "<M8[s]", "<f16"}) {
    std::string path = write_bytes("dtype.npy", npy_file(npy_dict(descr, "(1,)"), std::string(16, '\0')));
    expect_error(ErrorKind::IO, path, "not supported", [&] { load_npy(ctx(), path); });
  }
  std::string structured = "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }";
  expect_npy_error(ErrorKind::IO, "structured.npy", structured, floats({1}), "structured");
}

TEST(NpyHostile, BadMagicVersionsAndHeaders) {
  std::string good = npy_file(npy_dict("<f4", "(2,)"), floats({1, 2}));
  for (auto [name, bytes, needle] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"empty.npy", "", "bad magic"},
           {"magic.npy", "\x93NUMPZ" + good.substr(6), "bad magic"},
           {"version.npy", good.substr(0, 6) + "\x09" + good.substr(7), "version 9"},
           {"short_len.npy", good.substr(0, 9), "truncated"},
           {"short_header.npy", good.substr(0, 40), "truncated"},
           {"short_data.npy", good.substr(0, good.size() - 1), "truncated data"},
           {"v2_huge_header.npy", std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff", 12), "implausible"}}) {
    std::string path = write_bytes(name, bytes);
    expect_error(ErrorKind::IO, path, needle, [&] { load_npy(ctx(), path); });
  }
}

TEST(NpyHostile, UnseekableStreamReadsOnlyWhatArrives) {
  // The size of a pipe is unknown: the declared 3 GB must not be allocated ahead of the data.
  UnseekableBuf buf(npy_file(npy_dict("<f4", "(1000000, 768)"), std::string(64, 'x')));
  std::istream in(&buf);
  expect_error(ErrorKind::IO, "pipe.npy", "truncated", [&] { decode_npy(ctx(), in, "pipe.npy"); });
  UnseekableBuf ok(npy_file(npy_dict("<f4", "(2,)"), floats({1.5f, -2})));
  std::istream ok_in(&ok);
  EXPECT_EQ(decode_npy(ctx(), ok_in, "ok.npy").to_vector<float>(), (std::vector<float>{1.5f, -2}));
}

TEST(NpyHostile, LargerThanHostMemoryIsLimitExceeded) {
  // A sparse file that really holds 2^40 bytes of data (no disk space used): well-formed, but
  // more than the host's memory, so refused before reading.
  std::string path = io_path("sparse.npy");
  std::string header = npy_file(npy_dict("<f4", "(268435456, 1024)"), "");
  write_bytes("sparse.npy", header);
  std::error_code ec;
  std::filesystem::resize_file(path, header.size() + (uint64_t(1) << 40), ec);
  if (ec) GTEST_SKIP() << "no sparse files here: " << ec.message();
  expect_error(ErrorKind::LimitExceeded, path, "host memory", [&] { load_npy(ctx(), path); });
  expect_error(ErrorKind::LimitExceeded, path, "host memory", [&] { load_points(ctx(), path); });
  std::filesystem::remove(path);
}

TEST(NpyHostile, ZeroSizeFortranAndWideIntegers) {
  // Zero-size arrays load as such; as points they are refused.
  std::string empty = write_bytes("zero.npy", npy_file(npy_dict("<f4", "(0, 5)"), ""));
  EXPECT_EQ(load_npy(ctx(), empty).shape(), Shape({0, 5}));
  expect_error(ErrorKind::IO, empty, "no points", [&] { load_points(ctx(), empty); });
  // Fortran order, rank 3: element (i, j, k) at i + 2j + 6k.
  std::string fdata;
  for (int flat = 0; flat < 24; ++flat) {
    int i = flat % 2, j = (flat / 2) % 3, k = flat / 6;
    float v = float(100 * i + 10 * j + k);
    fdata.append(reinterpret_cast<const char*>(&v), 4);
  }
  std::string fortran = write_bytes("fortran3.npy", npy_file(npy_dict("<f4", "(2, 3, 4)", true), fdata));
  std::vector<float> got = load_npy(ctx(), fortran).to_vector<float>();
  ASSERT_EQ(got.size(), 24u);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) EXPECT_EQ(got[size_t(12 * i + 4 * j + k)], float(100 * i + 10 * j + k));
  // As points, Fortran order is transposed on the host too: [2, 12].
  EXPECT_EQ(load_points(ctx(), fortran).to_vector<float>(), got);
  // int64 (NumPy's default integers) read into i32 when in range, refused when not.
  std::string i8;
  for (int64_t v : {int64_t(3), int64_t(-7)}) i8.append(reinterpret_cast<const char*>(&v), 8);
  EXPECT_EQ(load_npy(ctx(), write_bytes("i8.npy", npy_file(npy_dict("<i8", "(2,)"), i8))).to_vector<int32_t>(),
            (std::vector<int32_t>{3, -7}));
  int64_t big = int64_t(1) << 40;
  std::string wide =
      write_bytes("i8big.npy", npy_file(npy_dict("<i8", "(1,)"), std::string(reinterpret_cast<const char*>(&big), 8)));
  expect_error(ErrorKind::DType, wide, "1099511627776", [&] { load_npy(ctx(), wide); });
  // f64 beyond f32's range is not silently a finite point.
  double huge = 1e300;
  std::string f8 = write_bytes(
      "f8huge.npy", npy_file(npy_dict("<f8", "(1, 1)"), std::string(reinterpret_cast<const char*>(&huge), 8)));
  expect_error(ErrorKind::Value, f8, "point 0", [&] { load_points(ctx(), f8); });
}

TEST(NpzHostile, CorruptArchivesGiveIoErrors) {
  std::string good_path = io_path("good.npz");
  save_npz(good_path, {{"a", Tensor::arange(ctx(), 0, 6)}, {"b", Tensor::ones(ctx(), {2, 2})}});
  std::ifstream in(good_path, std::ios::binary);
  std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(load_npz(ctx(), good_path).size(), 2u);
  size_t central = good.find("PK\x01\x02"), end = good.find("PK\x05\x06");
  ASSERT_NE(central, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  auto patch32 = [](std::string s, size_t at, uint32_t v) {
    for (int k = 0; k < 4; ++k) s[at + size_t(k)] = char((v >> (8 * k)) & 0xff);
    return s;
  };
  auto patch16 = [](std::string s, size_t at, uint32_t v) {
    s[at] = char(v & 0xff), s[at + 1] = char((v >> 8) & 0xff);
    return s;
  };
  for (auto [name, bytes, needle] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"empty.npz", "", "not a .npz"},
           {"half.npz", good.substr(0, good.size() / 2), "not a .npz"},
           {"central_past_end.npz", patch32(good, end + 16, 0x7fffffff), "past its end"},
           {"local_past_end.npz", patch32(good, central + 42, 0x7ffffff0), "past its end"},
           {"entry_past_end.npz", patch32(good, central + 20, 0x7ffffff0), "past its end"},
           {"stored_size.npz", patch32(good, central + 24, 7), "stored entry"},
           {"name_past_end.npz", patch16(good, central + 28, 0xffff), "past its end"},
           {"method.npz", patch16(good, central + 10, 12), "method 12"},
           {"encrypted.npz", patch16(good, central + 8, 1), "encrypted"},
           {"zip64.npz", patch16(good, end + 10, 0xffff), "zip64"},
           {"deflate_bomb.npz", patch32(patch16(good, central + 10, 8), central + 24, 0xfffffff0),
            "deflate can produce"},
           {"deflate_garbage.npz", patch16(good, central + 10, 8), "inflate"},
           {"crc.npz", patch32(good, central + 16, 0x12345678), "CRC"}}) {
    std::string path = write_bytes(name, bytes);
    expect_error(ErrorKind::IO, path, needle, [&] { load_npz(ctx(), path); });
  }
  // A hostile .npy inside a valid archive is named as archive:entry.
  std::string inner = npy_file(npy_dict("<f4", "(-1,)"), "");
  std::string zip = "PK\x03\x04";
  auto put = [&](std::string& s, uint32_t v, int bytes) {
    for (int k = 0; k < bytes; ++k) s += char((v >> (8 * k)) & 0xff);
  };
  uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef*>(inner.data()), uInt(inner.size())));
  auto entry = [&](std::string& s, bool central_entry) {
    if (central_entry) put(s, 20, 2);
    put(s, 20, 2), put(s, 0, 2), put(s, 0, 2), put(s, 0, 2), put(s, 0x21, 2), put(s, crc, 4);
    put(s, uint32_t(inner.size()), 4), put(s, uint32_t(inner.size()), 4), put(s, 5, 2), put(s, 0, 2);
    if (central_entry) put(s, 0, 2), put(s, 0, 2), put(s, 0, 2), put(s, 0, 4), put(s, 0, 4);
    s += "x.npy";
  };
  entry(zip, false);
  zip += inner;
  uint32_t central_at = uint32_t(zip.size());
  std::string dir = "PK\x01\x02";
  entry(dir, true);
  zip += dir + "PK\x05\x06";
  put(zip, 0, 2), put(zip, 0, 2), put(zip, 1, 2), put(zip, 1, 2), put(zip, uint32_t(dir.size()), 4);
  put(zip, central_at, 4), put(zip, 0, 2);
  std::string path = write_bytes("inner.npz", zip);
  expect_error(ErrorKind::IO, path + ":x", "negative", [&] { load_npz(ctx(), path); });
}
