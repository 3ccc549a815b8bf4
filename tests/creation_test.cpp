// Creation (full, arange, random), views, host round trips and .npy files.
#include <cstdio>
#include <fstream>

#include "surfgrad/io.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

// Host Philox-4x32-10, written from the paper's definition, to check the GPU bit for bit.
std::array<uint32_t, 4> philox(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1], uint32_t(p0)};
    k[0] += 0x9E3779B9u;
    k[1] += 0xBB67AE85u;
  }
  return c;
}

std::string temp_path(const std::string& name) { return ::testing::TempDir() + "/surfgrad_" + name; }

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

std::string npy_bytes(const std::string& header_dict, const std::string& data) {
  std::string h = header_dict;
  size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h += '\n';
  std::string out = "\x93NUMPY";
  out += char(1);
  out += char(0);
  out += char(h.size() & 0xff);
  out += char(h.size() >> 8);
  return out + h + data;
}

}  // namespace

TEST(Creation, FullArangeZerosOnes) {
  EXPECT_EQ(Tensor::full(ctx(), {2, 2}, 3.5).to_vector<float>(), std::vector<float>(4, 3.5f));
  EXPECT_EQ(Tensor::zeros(ctx(), {3}, DType::i32).to_vector<int32_t>(), std::vector<int32_t>(3, 0));
  EXPECT_EQ(Tensor::ones(ctx(), {2}, DType::u32).to_vector<uint32_t>(), std::vector<uint32_t>(2, 1));
  EXPECT_EQ(Tensor::arange(ctx(), 2, 11, 3, DType::i32).to_vector<int32_t>(), (std::vector<int32_t>{2, 5, 8}));
  EXPECT_EQ(Tensor::arange(ctx(), 1, 0, -0.25).to_vector<float>(), (std::vector<float>{1, 0.75f, 0.5f, 0.25f}));
  EXPECT_EQ(Tensor::arange(ctx(), 0, 0).numel(), 0);
  EXPECT_THROW(Tensor::arange(ctx(), 0, 1, 0), Error);
  Tensor s = Tensor::full(ctx(), {}, -2);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.to_vector<float>(), std::vector<float>{-2});
}

TEST(Creation, UniformIsPhiloxBitForBit) {
  const uint64_t seed = 0x123456789abcdefull;
  const int64_t n = 1001;
  auto got = Tensor::uniform(ctx(), {n}, seed).to_vector<float>();
  for (int64_t i = 0; i < n; ++i) {
    auto r = philox({uint32_t(i / 4), 0, 0, 0}, {uint32_t(seed), uint32_t(seed >> 32)});
    float want = (float(r[size_t(i % 4)] >> 8) + 0.5f) * (1.0f / 16777216.0f);
    ASSERT_EQ(got[size_t(i)], want) << "element " << i;
  }
  // Philox-4x32-10 known-answer vector (Random123 kat_vectors: counter 0, key 0).
  auto kat = philox({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(kat[0], 0x6627e8d5u);
  EXPECT_EQ(kat[1], 0xe169c58du);
  EXPECT_EQ(kat[2], 0xbc57ac4cu);
  EXPECT_EQ(kat[3], 0x9b00dbd8u);
}

TEST(Creation, RandomStatisticsAndDeterminism) {
  auto u = Tensor::uniform(ctx(), {100000}, 5, -1, 3).to_vector<float>();
  double mean = 0;
  for (float x : u) {
    ASSERT_GT(x, -1.0f);
    ASSERT_LT(x, 3.0f);
    mean += x;
  }
  EXPECT_NEAR(mean / double(u.size()), 1.0, 0.02);
  auto z = Tensor::normal(ctx(), {100001}, 6, 2, 0.5).to_vector<float>();
  double m = 0, v = 0;
  for (float x : z) m += x;
  m /= double(z.size());
  for (float x : z) v += (x - m) * (x - m);
  v /= double(z.size());
  EXPECT_NEAR(m, 2.0, 0.01);
  EXPECT_NEAR(std::sqrt(v), 0.5, 0.01);
  EXPECT_EQ(Tensor::normal(ctx(), {777}, 9).to_vector<float>(), Tensor::normal(ctx(), {777}, 9).to_vector<float>());
  EXPECT_NE(Tensor::normal(ctx(), {777}, 9).to_vector<float>(), Tensor::normal(ctx(), {777}, 10).to_vector<float>());
  if (ctx()->features().shader_f16) {
    auto h = Tensor::uniform(ctx(), {1000}, 5, 0, 1, DType::f16).to_vector<float>();
    auto f = Tensor::uniform(ctx(), {1000}, 5).to_vector<float>();
    for (size_t i = 0; i < h.size(); ++i) EXPECT_NEAR(h[i], f[i], 1e-3);
  }
}

TEST(Creation, ViewsShareStorage) {
  Tensor x = Tensor::arange(ctx(), 0, 24).reshape({2, 3, 4});
  EXPECT_TRUE(x.is_contiguous());
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), Shape({4, 2, 3}));
  EXPECT_TRUE(p.shares_storage(x));
  EXPECT_FALSE(p.is_contiguous());
  auto pv = p.to_vector<float>();
  EXPECT_EQ(pv[size_t(1 * 6 + 1 * 3 + 2)], 1 * 12 + 2 * 4 + 1);  // p[1,1,2] = x[1,2,1]
  Tensor r = p.reshape({-1});                                    // not viewable: copies
  EXPECT_FALSE(r.shares_storage(x));
  EXPECT_EQ(r.to_vector<float>(), pv);
  EXPECT_TRUE(x.reshape({6, -1}).shares_storage(x));
  Tensor s = x.slice(2, 1, 4, 2).slice(0, -1, 2);  // [1, 3, 2]
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{13, 15, 17, 19, 21, 23}));
  Tensor e = Tensor::arange(ctx(), 0, 3).reshape({3, 1}).expand({2, 3, 4});
  EXPECT_EQ(e.strides(), Shape({0, 1, 0}));
  EXPECT_EQ(e.contiguous().to_vector<float>()[size_t(12 + 4 * 2 + 3)], 2.0f);
  EXPECT_EQ(x.unsqueeze(1).shape(), Shape({2, 1, 3, 4}));
  EXPECT_EQ(x.unsqueeze(-1).shape(), Shape({2, 3, 4, 1}));
  EXPECT_EQ(x.unsqueeze(1).squeeze(1).shape(), x.shape());
  EXPECT_EQ(x.transpose(0, 2).shape(), Shape({4, 3, 2}));
}

TEST(Creation, HostRoundTripAllDtypes) {
  std::vector<float> f = {1.5f, -2.25f, 1e-20f, 3e38f};
  EXPECT_EQ(Tensor::from_vector(ctx(), f, {2, 2}).to_vector<float>(), f);
  std::vector<int32_t> i = {INT32_MIN, -1, 0, INT32_MAX};
  EXPECT_EQ(Tensor::from_vector(ctx(), i, {4}).to_vector<int32_t>(), i);
  std::vector<uint32_t> u = {0, 1, 0x80000000u, 0xffffffffu, 7};
  EXPECT_EQ(Tensor::from_vector(ctx(), u, {5}).to_vector<uint32_t>(), u);
  if (ctx()->features().shader_f16) {
    std::vector<uint16_t> h = {0x3c00, 0xc000, 0x0001, 0x7bff, 0x8000};  // 1, -2, min subnormal, max, -0
    std::vector<uint16_t> back(5);
    Tensor::from_host(ctx(), h.data(), {5}, DType::f16).to_host(back.data());
    EXPECT_EQ(back, h);
  }
  EXPECT_THROW(Tensor::from_vector(ctx(), f, {3}), Error);
}

TEST(Creation, HalfConversionRoundsToNearestEven) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaN payloads
    float f = half_to_float(uint16_t(h));
    ASSERT_EQ(float_to_half(f), h) << std::hex << h;
  }
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3c00);  // tie → even
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);            // rounds to inf
}

TEST(Npy, SaveLoadRoundTrip) {
  std::vector<DType> dts = {DType::f32, DType::i32, DType::u32};
  if (ctx()->features().shader_f16) dts.push_back(DType::f16);
  for (DType dt : dts) {
    Ref x = random_ref({3, 1, 5}, 71, dt);
    std::string path = temp_path(std::string("rt_") + dtype_name(dt) + ".npy");
    save_npy(upload(x, dt), path);
    Tensor y = load_npy(ctx(), path);
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_TRUE(close(read(y), x, {0, 0}, std::string("npy round trip ") + dtype_name(dt)));
  }
  // Views are saved as what they show.
  Tensor v = Tensor::arange(ctx(), 0, 6).reshape({2, 3}).t();
  save_npy(v, temp_path("view.npy"));
  EXPECT_EQ(load_npy(ctx(), temp_path("view.npy")).to_vector<float>(), v.contiguous().to_vector<float>());
  save_npy(Tensor::full(ctx(), {}, 4), temp_path("scalar.npy"));
  EXPECT_EQ(load_npy(ctx(), temp_path("scalar.npy")).rank(), 0);
}

TEST(Npy, ReadsNumpyLayouts) {
  // f64 → f32, Fortran order, u8, version 2 header: files written as NumPy writes them.
  std::string f8;
  for (double d : {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}) f8.append(reinterpret_cast<const char*>(&d), 8);
  write_file(temp_path("f8.npy"), npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", f8));
  EXPECT_EQ(load_npy(ctx(), temp_path("f8.npy")).to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // Fortran order: column-major data for [[1, 2, 3], [4, 5, 6]] is 1 4 2 5 3 6.
  std::string f4;
  for (float d : {1.0f, 4.0f, 2.0f, 5.0f, 3.0f, 6.0f}) f4.append(reinterpret_cast<const char*>(&d), 4);
  write_file(temp_path("fortran.npy"), npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", f4));
  Tensor ft = load_npy(ctx(), temp_path("fortran.npy"));
  EXPECT_EQ(ft.shape(), Shape({2, 3}));
  EXPECT_EQ(ft.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  write_file(temp_path("u8.npy"), npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }",
                                            std::string("\x00\x7f\x80\xff", 4)));
  EXPECT_EQ(load_npy(ctx(), temp_path("u8.npy")).to_vector<uint32_t>(), (std::vector<uint32_t>{0, 127, 128, 255}));
}

TEST(Npy, BadFilesGiveClearErrors) {
  auto expect_io = [](const std::string& path, const std::string& needle) {
    try {
      load_npy(ctx(), path);
      ADD_FAILURE() << path << " loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::IO) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << "message must name the file: " << e.what();
    }
  };
  expect_io(temp_path("missing.npy"), "cannot open");
  write_file(temp_path("notnpy.npy"), "hello world, not numpy");
  expect_io(temp_path("notnpy.npy"), "bad magic");
  std::string good = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (10,), }", std::string(40, '\0'));
  write_file(temp_path("trunc_data.npy"), good.substr(0, good.size() - 7));
  expect_io(temp_path("trunc_data.npy"), "truncated data");
  write_file(temp_path("trunc_header.npy"), good.substr(0, 30));
  expect_io(temp_path("trunc_header.npy"), "truncated");
  write_file(temp_path("complex.npy"),
             npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0')));
  expect_io(temp_path("complex.npy"), "not supported");
  write_file(temp_path("bigendian.npy"),
             npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0')));
  expect_io(temp_path("bigendian.npy"), "not supported");
  write_file(temp_path("noshape.npy"), npy_bytes("{'descr': '<f4', 'fortran_order': False, }", ""));
  expect_io(temp_path("noshape.npy"), "shape");
  try {
    save_npy(Tensor::ones(ctx(), {2}), "/nonexistent-dir/x.npy");
    ADD_FAILURE() << "saved into a missing directory";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::IO);
  }
}
