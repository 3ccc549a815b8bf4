// The FFT repulsion's spread cell by cell (tsne_fft_spread_sorted.wgsl, TsneCellOrder,
// ExclusiveScan): the prefix sums against the host's, the order a permutation that visits the
// points cell by cell, and the grid the plain 64-bit spread's to the bit, whatever the order
// (sorted, stale, index order, shuffled) and however many points share a cell.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "maps/prefix_sum.hpp"
#include "maps/tsne_cell_order.hpp"
#include "maps/tsne_repulsion.hpp"
#include "surfgrad/maps.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

bool has_subgroups() { return ctx()->features().subgroups; }

// tsne_fft_frame.wgsl's frame for points in [lo, lo + extent)², g nodes a side.
std::vector<float> frame_for(float lo, float extent, uint32_t g, int64_t n) {
  const float h = extent / float(g - 4), centre = lo + 0.5f * extent;
  std::vector<float> f(16, 0.0f);
  f[0] = f[1] = lo - centre - h;
  f[2] = h, f[3] = f[4] = centre;
  f[5] = std::exp2(61.0f - std::ceil(std::log2(2.0f * float(n))));
  return f;
}

// Positions: uniform over the box, or most of them in a few tight spots (hundreds a cell).
std::vector<float> positions(int64_t n, float lo, float extent, bool crowded, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> p(size_t(2 * n));
  for (int64_t i = 0; i < n; ++i) {
    float x = u(rng), y = u(rng);
    if (crowded && i % 8 != 0) {  // seven in eight near one of three spots, 1% of the box wide
      int s = int(rng() % 3);
      x = 0.2f + 0.3f * float(s) + 0.01f * x, y = 0.7f - 0.25f * float(s) + 0.01f * y;
    }
    p[size_t(2 * i)] = lo + extent * x, p[size_t(2 * i + 1)] = lo + extent * y;
  }
  return p;
}

std::vector<uint32_t> spread(const Tensor& y, const Tensor& frame, uint32_t g, const Tensor* order) {
  const int64_t n = y.shape(0);
  Tensor acc = Tensor::zeros(ctx(), {int64_t(g) * g * 2}, DType::u32);
  if (order) {
    kernels::Program::file(ctx(), "tsne_fft_spread_sorted.wgsl", {}, {.subgroups = true})
        .launch({acc, y, frame, *order}, {n, g}, kernels::groups_for(*ctx(), uint64_t(n), 256));
  } else {
    kernels::Program::file(ctx(), "tsne_fft_spread.wgsl", {{"NARROW", "false"}})
        .launch({acc, y, frame}, {n, g}, kernels::groups_for(*ctx(), uint64_t(n), 256));
  }
  return acc.to_vector<uint32_t>();
}

}  // namespace

TEST(ExclusiveScan, MatchesTheHostsSums) {
  ExclusiveScan scan(ctx());
  std::mt19937 rng(5);
  // One block, block edges, two levels, three levels (1,024² + 5 words: 1,025 block totals).
  for (int64_t n : {1, 7, 1023, 1024, 1025, 5000, 1024 * 1024 + 5}) {
    std::vector<uint32_t> words(static_cast<size_t>(n));
    for (auto& w : words) w = rng() % 4 == 0 ? uint32_t(rng()) : uint32_t(rng() % 50);  // some sums wrap
    Tensor t = Tensor::from_vector(ctx(), words, {n});
    scan.run(t);
    std::vector<uint32_t> got = t.to_vector<uint32_t>();
    uint32_t run = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[size_t(i)], run) << "word " << i << " of " << n;
      run += words[size_t(i)];
    }
  }
}

TEST(ExclusiveScan, RefusesOtherTensors) {
  ExclusiveScan scan(ctx());
  EXPECT_THROW(scan.run(Tensor::zeros(ctx(), {4})), Error);                 // f32
  EXPECT_THROW(scan.run(Tensor::zeros(ctx(), {2, 2}, DType::u32)), Error);  // rank 2
  EXPECT_THROW(scan.run(Tensor::zeros(ctx(), {0}, DType::u32)), Error);     // empty
}

TEST(TsneCellOrder, VisitsEveryPointOnceCellByCell) {
  const int64_t n = 7000;
  const uint32_t g = 48;
  std::vector<float> p = positions(n, -3.0f, 12.0f, true, 3), f = frame_for(-3.0f, 12.0f, g, n);
  Tensor y = Tensor::from_vector(ctx(), p, {n, 2}), frame = Tensor::from_vector(ctx(), f, {16});
  TsneCellOrder order(ctx());
  order.update(y, frame, int(g));
  std::vector<uint32_t> o = order.order().to_vector<uint32_t>(), sorted = o;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[size_t(i)], uint32_t(i)) << "not a permutation";
  // The host's cells along the order never go back (the GPU's division may round a point on a
  // cell's edge the other way: a few such points are allowed).
  auto cell = [&](uint32_t i) {
    float cx = std::floor((p[2 * i] - f[3] - f[0]) / f[2]), cy = std::floor((p[2 * i + 1] - f[4] - f[1]) / f[2]);
    uint32_t x = std::min(uint32_t(std::max(cx, 1.0f)), g - 3), yy = std::min(uint32_t(std::max(cy, 1.0f)), g - 3);
    return yy * g + x;
  };
  int64_t back = 0, changes = 0;
  for (size_t t = 1; t < o.size(); ++t) {
    back += cell(o[t]) < cell(o[t - 1]);
    changes += cell(o[t]) != cell(o[t - 1]);
  }
  EXPECT_LE(back, n / 500);
  EXPECT_LT(changes, n / 4);  // the crowded spots: many points a cell, so runs are long
  // Updated for other positions, the same object sorts them too.
  std::vector<float> q = positions(n, -3.0f, 12.0f, false, 4);
  order.update(Tensor::from_vector(ctx(), q, {n, 2}), frame, int(g));
  EXPECT_NE(order.order().to_vector<uint32_t>(), o);
}

TEST(TsneSortedSpread, GridIsThePlainSpreadsToTheBit) {
  if (!has_subgroups()) GTEST_SKIP() << "the sorted spread needs subgroups";
  struct Case {
    int64_t n;
    uint32_t g;
    bool crowded;
  };
  for (Case c : {Case{5000, 64, false}, Case{20000, 32, true}, Case{1, 16, false}, Case{333, 48, true}}) {
    std::vector<float> p = positions(c.n, 0.0f, 10.0f, c.crowded, uint32_t(c.n)), f = frame_for(0.0f, 10.0f, c.g, c.n);
    Tensor y = Tensor::from_vector(ctx(), p, {c.n, 2}), frame = Tensor::from_vector(ctx(), f, {16});
    const std::vector<uint32_t> plain = spread(y, frame, c.g, nullptr);
    TsneCellOrder sorted(ctx());
    sorted.update(y, frame, int(c.g));
    // A stale order: sorted for other positions of the same points.
    TsneCellOrder stale(ctx());
    stale.update(Tensor::from_vector(ctx(), positions(c.n, 0.0f, 10.0f, !c.crowded, 99), {c.n, 2}), frame, int(c.g));
    std::vector<uint32_t> ids(size_t(c.n)), shuffled(size_t(c.n));
    std::iota(ids.begin(), ids.end(), 0u);
    shuffled = ids;
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
    Tensor index = Tensor::from_vector(ctx(), ids, {c.n}), shuffle = Tensor::from_vector(ctx(), shuffled, {c.n});
    int checked = 0;
    for (const Tensor* o : std::vector<const Tensor*>{&sorted.order(), &stale.order(), &index, &shuffle}) {
      EXPECT_EQ(spread(y, frame, c.g, o), plain) << c.n << " points, G = " << c.g << ", order " << checked;
      ++checked;
    }
    // Not all zeros: the unit charges are there (cubic weights sum to 1 a point).
    double total = 0;
    for (size_t e = 0; e < plain.size(); e += 2)
      total += double(int64_t((uint64_t(plain[e + 1]) << 32) | plain[e])) / double(f[5]);
    EXPECT_NEAR(total, double(c.n), 1e-6 * double(c.n) + 1e-6);
  }
}

// The forces through TsneRepulsion, sorted every call and every third, while the map grows, the
// grid changes size and the points change number: the same bits (a stale order changes nothing but
// speed). And the environment's choices, refused by name when wrong, at the FFT's first call.
TEST(TsneSortedSpread, StaleOrdersGiveTheSameForces) {
  if (!has_subgroups()) GTEST_SKIP() << "the sorted spread needs subgroups";
  Tensor base = Tensor::normal(ctx(), {4000, 2}, 9, 0, 1);
  struct Step {
    double scale;
    int g;
    int64_t n;
  };
  const Step steps[] = {{1.0, 64, 4000}, {1.3, 64, 4000}, {2.0, 96, 4000},
                        {2.0, 96, 3000}, {3.0, 64, 3000}, {3.0, 64, 4000}};
  auto forces = [&](const char* every) {
    EnvVar env("SURFGRAD_TSNE_ORDER_EVERY", every);
    TsneRepulsion r(ctx(), TsneRepulsion::Spread::Sorted);
    std::vector<std::vector<float>> out;
    for (const Step& st : steps) {
      Tensor y = mul(base.slice(0, 0, st.n), scalar_like(base, st.scale)).contiguous();
      Tensor f = Tensor::empty(ctx(), {st.n, 4});
      r.interpolated(y, f, st.g);
      out.push_back(f.to_vector<float>());
    }
    return out;
  };
  EXPECT_EQ(forces("3"), forces("1"));
  Tensor y = base.contiguous(), f = Tensor::empty(ctx(), {4000, 4});
  {
    EnvVar env("SURFGRAD_TSNE_ORDER_EVERY", "0");
    TsneRepulsion r(ctx(), TsneRepulsion::Spread::Sorted);
    EXPECT_THROW(r.interpolated(y, f, 64), Error);
  }
  {
    EnvVar env("SURFGRAD_TSNE_SPREAD", "fast");
    TsneRepulsion r(ctx());
    r.exact(y, f);  // exact repulsion never reads the spread's variables
    try {
      r.interpolated(y, f, 64);
      ADD_FAILURE() << "SURFGRAD_TSNE_SPREAD=fast was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("SURFGRAD_TSNE_SPREAD"), std::string::npos) << e.what();
    }
  }
  EnvVar env("SURFGRAD_TSNE_SPREAD", "plain");
  EXPECT_FALSE(TsneRepulsion::sorted_spread(*ctx()));
  EXPECT_TRUE(TsneRepulsion::sorted_spread(*ctx(), TsneRepulsion::Spread::Sorted));
}

// A whole map with the sorted spread (forced: CPU adapters default to the plain one) is the
// same from run to run, though points of one cell are ordered by the threads' timing.
TEST(TsneSortedSpread, MapIsDeterministic) {
  if (!has_subgroups()) GTEST_SKIP() << "the sorted spread needs subgroups";
  EnvVar env("SURFGRAD_TSNE_SPREAD", "sorted");
  Tensor x = Tensor::normal(ctx(), {1500, 8}, 4, 0, 1);
  TsneOptions o;
  o.iterations = 60;
  o.exaggeration_iterations = 30;
  o.repulsion = Repulsion::Fft;
  std::vector<float> a = tsne(x, o).to_vector<float>(), b = tsne(x, o).to_vector<float>();
  EXPECT_EQ(a, b);
  for (float v : a) ASSERT_TRUE(std::isfinite(v));
}

// The spread's split of a contribution into 64-bit two's-complement words (split64,
// tsne_fft_common.wgsl) against the host's int64, at the edges: small negatives (which an f32
// 2^32 − |v| cannot hold), the 2^24 and 2^32 boundaries, and magnitudes up to 2^61.
TEST(TsneSortedSpread, ContributionsSplitExactly) {
  std::vector<float> v = {0.0f,           -0.0f,           1.0f,           -1.0f,           -3.0f,
                          127.0f,         -127.0f,         -128.0f,        -129.0f,         16777216.0f,
                          -16777216.0f,   4294967040.0f,   -4294967040.0f, 4294967296.0f,   -4294967296.0f,
                          0x1.000002p40f, -0x1.000002p40f, 0x1.fffffep55f, -0x1.fffffep55f, 0x1p61f,
                          -0x1p61f,       -0x1.234566p45f};
  std::mt19937 rng(3);
  for (int i = 0; i < 200; ++i) {  // integer-valued f32s of every magnitude up to 2^61, both signs
    float m = std::ldexp(float(rng() % (1u << 24)), int(rng() % 38));
    v.push_back(rng() % 2 ? -m : m);
  }
  const int64_t n = int64_t(v.size());
  auto k = kernels::Program::generated(ctx(), "test|split64", [] {
    return std::string(R"(// #include "tsne_fft_common.wgsl"
@group(0) @binding(0) var<storage, read_write> words: array<u32>;
@group(0) @binding(1) var<storage, read> v: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x >= arg(0u)) { return; }
  let w = split64(v[id.x]);
  words[2u * id.x] = w.x;
  words[2u * id.x + 1u] = w.y;
})");
  });
  Tensor words = Tensor::zeros(ctx(), {2 * n}, DType::u32), values = Tensor::from_vector(ctx(), v, {n});
  k.launch({words, values}, {n}, kernels::groups_for(*ctx(), uint64_t(n), 64));
  std::vector<uint32_t> got = words.to_vector<uint32_t>();
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t want = uint64_t(int64_t(v[size_t(i)]));
    EXPECT_EQ((uint64_t(got[size_t(2 * i + 1)]) << 32) | got[size_t(2 * i)], want) << "v = " << v[size_t(i)];
  }
}
