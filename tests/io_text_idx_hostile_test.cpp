// Hostile IDX (plain and gzip) and CSV files, labels out of range, and shapes whose element
// count or strides overflow: each ends in the documented surfgrad::Error naming the file.
#include <sys/stat.h>
#include <zlib.h>

#include <cstdio>
#include <thread>

#include "io_test_util.hpp"
#include "surfgrad/io.hpp"
#include "tensor/internal.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

std::string gzip(const std::string& bytes) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, uLong(bytes.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = uInt(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string idx_header(uint8_t type, std::vector<uint32_t> dims) {
  std::string h = {'\0', '\0', char(type), char(dims.size())};
  for (uint32_t d : dims)
    for (int k = 3; k >= 0; --k) h += char((d >> (8 * k)) & 0xff);
  return h;
}

}  // namespace

TEST(IdxHostile, HugeDeclaredSizesFailBeforeAllocating) {
  // 32 bytes of gzip declaring 0xFFFFFFFF³ elements: the product overflows 64 bits.
  std::string cube = write_bytes("cube.idx.gz", gzip(idx_header(0x08, {0xffffffffu, 0xffffffffu, 0xffffffffu})));
  expect_error(ErrorKind::LimitExceeded, cube, "[4294967295, 4294967295, 4294967295]", [&] { read_idx(cube); });
  // 4 GiB declared from a few compressed bytes: more than deflate can expand them to.
  std::string bomb = write_bytes("bomb.idx.gz", gzip(idx_header(0x08, {65536, 65536}) + "abc"));
  expect_error(ErrorKind::IO, bomb, "1032", [&] { read_idx(bomb); });
  // Plain: 10^6 elements declared, 10 present.
  std::string plain = write_bytes("plain.idx", idx_header(0x0D, {1000, 1000}) + "0123456789");
  expect_error(ErrorKind::IO, plain, "truncated IDX data", [&] { read_idx(plain); });
  expect_error(ErrorKind::IO, plain, "truncated IDX data", [&] { load_points(ctx(), plain); });
}

TEST(IdxHostile, CorruptAndTruncatedGzipAreNamedAsSuch) {
  std::string body = idx_header(0x08, {64, 64});
  for (int i = 0; i < 64 * 64; ++i) body += char((i * 7919) & 0xff);
  std::string gz = gzip(body);
  ASSERT_EQ(read_idx(write_bytes("ok.idx.gz", gz)).values.size(), 4096u);
  std::string corrupt = gz;
  for (size_t i = 20; i < 40 && i < corrupt.size(); ++i) corrupt[i] = char(corrupt[i] ^ 0xa5);
  std::string corrupt_path = write_bytes("corrupt.idx.gz", corrupt);
  expect_error(ErrorKind::IO, corrupt_path, "gzip", [&] { read_idx(corrupt_path); });
  std::string cut = write_bytes("cut.idx.gz", gz.substr(0, gz.size() / 2));
  expect_error(ErrorKind::IO, cut, "truncated", [&] { read_idx(cut); });
  // A bad CRC at the end of an otherwise complete stream.
  std::string crc = gz;
  crc[crc.size() - 6] = char(crc[crc.size() - 6] ^ 1);
  std::string crc_path = write_bytes("crc.idx.gz", crc);
  expect_error(ErrorKind::IO, crc_path, "corrupt gzip", [&] { read_idx(crc_path); });
}

TEST(IdxHostile, HeaderErrors) {
  for (auto [name, bytes, needle] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"type.idx", idx_header(0x1A, {1}) + "x", "0x1A"},
           {"rank.idx", idx_header(0x08, {1, 1, 1, 1, 1, 1, 1, 1, 1}) + "x", "rank 9"},
           {"short.idx", std::string("\0\0", 2), "not an IDX"},
           {"header.idx", idx_header(0x08, {5, 5}).substr(0, 9), "truncated IDX header"},
           {"gz_magic.idx.gz", gzip("\x01\x02\x08\x01"), "not an IDX"}}) {
    std::string path = write_bytes(name, bytes);
    expect_error(ErrorKind::IO, path, needle, [&] { read_idx(path); });
  }
  // Big-endian elements of every type.
  std::string path = write_bytes("types.idx", idx_header(0x0B, {2}) + std::string("\xff\xfe\x01\x00", 4));
  EXPECT_EQ(read_idx(path).values, (std::vector<double>{-2, 256}));
}

TEST(IdxHostile, ReadsFromAPipe) {
  // A FIFO has no size to check in advance: the reader takes what arrives, then checks it.
  std::string fifo = io_path("pipe.idx");
  std::remove(fifo.c_str());
  if (mkfifo(fifo.c_str(), 0600) != 0) GTEST_SKIP() << "no FIFOs here";
  std::string bytes = idx_header(0x08, {2, 2}) + std::string("\x01\x02\x03", 3);  // one byte short
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << bytes; });
  expect_error(ErrorKind::IO, fifo, "truncated IDX data", [&] { read_idx(fifo); });
  writer.join();
  std::thread writer2([&] { std::ofstream(fifo, std::ios::binary) << bytes + "\x04"; });
  EXPECT_EQ(read_idx(fifo).values, (std::vector<double>{1, 2, 3, 4}));
  writer2.join();
  std::remove(fifo.c_str());
}

TEST(CsvHostile, StrictNumbers) {
  for (auto [name, text, needle] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"junk.csv", "1,2\n3,0.5x\n", ":2:3: non-number '0.5x'"},
           {"hex.csv", "1,2\n0x1f,3\n", ":2:1: non-number '0x1f'"},
           {"empty_field.csv", "1,,2\n", ":1:3: empty field"},
           {"trailing_comma.csv", "1,2,\n", "empty field"},
           {"space_inside.csv", "1 2,3\n", "non-number '1 2'"},
           {"double_sign.csv", "++1,2\n", "non-number"},
           {"ragged.csv", "1,2,3\n4,5\n", "line 2 has 2 values"},
           {"mixed_header.csv", "x,1\n2,3\n", ":1:1: non-number 'x'"},
           {"later_text.csv", "a,b\n1,2\nc,d\n", ":3:1: non-number"}}) {
    std::string path = write_bytes(name, text);
    expect_error(ErrorKind::IO, path, needle, [&] { load_points(ctx(), path); });
  }
  for (auto [name, text, needle] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"nan.csv", "1,2\n3,NaN\n", ":2:3:"},
           {"inf.csv", "1,2\n-inf,3\n", "point 1"},
           {"infinity.csv", "infinity,2\n", "not a finite number"},
           {"overflow.csv", "1e999,2\n", "1e999"},
           {"f32_overflow.csv", "1e300,2\n", "point 0"}}) {
    std::string path = write_bytes(name, text);
    expect_error(ErrorKind::Value, path, needle, [&] { load_points(ctx(), path); });
  }
  // What is accepted: blanks around fields, CRLF, '+', exponents, underflow to 0, a header.
  std::string ok = write_bytes("ok.csv", "x , y\r\n +1.5 , -2e-3\r\n\r\n1e-400,  7 \r\n");
  EXPECT_EQ(load_points(ctx(), ok).to_vector<float>(), (std::vector<float>{1.5f, -2e-3f, 0, 7}));
  std::string bom = write_bytes("bom.csv",
                                "\xEF\xBB\xBF"
                                "1,2\n");
  EXPECT_EQ(load_points(ctx(), bom).to_vector<float>(), (std::vector<float>{1, 2}));
  std::string header_only = write_bytes("header_only.csv", "x,y\n");
  expect_error(ErrorKind::IO, header_only, "no points", [&] { load_points(ctx(), header_only); });
}

TEST(LabelsHostile, IntegersInRangeFromEveryFormat) {
  for (auto [name, text, needle] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"half.csv", "0\n0.5\n1\n", "label 1 is 0.5"},
           {"negative.csv", "0\n-1000\n1\n", "label 1 is -1000"},
           {"big.csv", "0\n2147483648\n1\n", "2147483648"}}) {
    std::string path = write_bytes(name, text);
    expect_error(ErrorKind::Value, path, needle, [&] { load_labels(ctx(), path, 3); });
  }
  float f[] = {1, 2.25f, 3};
  std::string npy =
      write_bytes("labels_f.npy", npy_file(npy_dict("<f4", "(3,)"), std::string(reinterpret_cast<char*>(f), 12)));
  expect_error(ErrorKind::Value, npy, "label 1 is 2.25", [&] { load_labels(ctx(), npy, 3); });
  int32_t neg[] = {0, 1, -1};
  std::string npy_neg =
      write_bytes("labels_neg.npy", npy_file(npy_dict("<i4", "(3,)"), std::string(reinterpret_cast<char*>(neg), 12)));
  expect_error(ErrorKind::Value, npy_neg, "label 2 is -1", [&] { load_labels(ctx(), npy_neg, 3); });
  // Valid labels from .npy (int64, u8), IDX and CSV.
  int64_t l8[] = {2, 0, 9};
  std::string npy_ok =
      write_bytes("labels_i8.npy", npy_file(npy_dict("<i8", "(3,)"), std::string(reinterpret_cast<char*>(l8), 24)));
  EXPECT_EQ(load_labels(ctx(), npy_ok, 3).to_vector<int32_t>(), (std::vector<int32_t>{2, 0, 9}));
  std::string idx_ok = write_bytes("labels.idx", idx_header(0x08, {3}) + std::string("\x07\x00\x03", 3));
  EXPECT_EQ(load_labels(ctx(), idx_ok, 3).to_vector<int32_t>(), (std::vector<int32_t>{7, 0, 3}));
  std::string csv_ok = write_bytes("labels_ok.csv", "label\n4\n5\n2147483647\n");
  EXPECT_EQ(load_labels(ctx(), csv_ok, 3).to_vector<int32_t>(), (std::vector<int32_t>{4, 5, 2147483647}));
}

TEST(ShapeHostile, ElementCountsAndStridesAreOverflowChecked) {
  auto expect_shape_error = [](ErrorKind kind, const Shape& shape, const std::string& needle, auto&& f) {
    try {
      f(shape);
      ADD_FAILURE() << shape_str(shape) << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  int64_t big = int64_t(1) << 40;
  auto numel = [](const Shape& s) { return shape_numel(s); };
  auto strides = [](const Shape& s) { return contiguous_strides(s); };
  expect_shape_error(ErrorKind::LimitExceeded, {big, big}, "[1099511627776, 1099511627776]", numel);
  expect_shape_error(ErrorKind::LimitExceeded, {0, big, big}, "64-bit", numel);
  expect_shape_error(ErrorKind::LimitExceeded, {0, big, big}, "[0, 1099511627776, 1099511627776]", strides);
  expect_shape_error(ErrorKind::Shape, {3, -2}, "negative", numel);
  expect_shape_error(ErrorKind::Shape, {3, -2}, "[3, -2]", strides);
  expect_shape_error(ErrorKind::LimitExceeded, {big, big}, "[1099511627776, 1099511627776]",
                     [](const Shape& s) { return Tensor::empty(ctx(), s); });
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({5, 0, big}), 0);
  EXPECT_EQ(contiguous_strides({2, 3, 4}), Shape({12, 4, 1}));
  EXPECT_EQ(shape_numel({int64_t(1) << 31, int64_t(1) << 31}), int64_t(1) << 62);
}
