// The subgroup-matrix exact kNN (src/maps/knn_subgroup_matrix.cpp) with its builtins emulated
// (adapters without the feature: lavapipe): f16 candidates, the f32 re-check and the recompute of
// flagged rows against float64 brute force on fuzzed n, d, k, with duplicate points and integer
// grids (ties). Recall must be exactly 1.0: every point closer than the k-th true distance (less
// an f32 tolerance) is listed, and nothing farther than it (plus the tolerance).
#include "maps/knn_subgroup_matrix.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "maps/knn_sgmat_internal.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

struct Case {
  int64_t n, d;
  int k;
  int kind;  // 0 Gaussian clusters, 1 duplicates, 2 integer grid (many ties)
  int candidates = 0;
  int64_t pairs = 0, row_begin = 0, row_end = -1;
  bool emulate = true;  // false: the device's own subgroup matrices (GPUs under Dawn)
};

std::vector<float> make_points(const Case& c, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> x(size_t(c.n * c.d));
  for (int64_t i = 0; i < c.n; ++i)
    for (int64_t l = 0; l < c.d; ++l) {
      float v = g(gen) + 3.0f * float((i % 5) == int64_t(l % 5)) + 100.0f;  // off-centre: the centring matters
      if (c.kind == 2) v = float(int(gen() % 4));
      x[size_t(i * c.d + l)] = v;
    }
  if (c.kind == 1)  // every third point repeats an earlier one
    for (int64_t i = 3; i < c.n; i += 3) std::copy_n(&x[size_t((i / 3) * c.d)], c.d, &x[size_t(i * c.d)]);
  return x;
}

// Sets `recomputed` to the rows the kernel recomputed in f32.
void check_case(const Case& c, uint32_t seed, int64_t& recomputed) {
  std::vector<float> x = make_points(c, seed);
  Tensor t = Tensor::from_vector(ctx(), x, {c.n, c.d});
  const int64_t r0 = c.row_begin, r1 = c.row_end < 0 ? c.n : c.row_end;
  KnnSubgroupMatrixOptions o;
  o.emulate = c.emulate;
  o.candidates = c.candidates;
  o.pairs_per_dispatch = c.pairs;
  KnnSubgroupMatrixStats stats;
  KnnResult r = knn_exact_subgroup_matrix(t, c.k, r0, r1, o, &stats);
  std::vector<int32_t> ids = r.indices.to_vector<int32_t>();
  std::vector<float> dist = r.distances.to_vector<float>();
  for (int64_t i = r0; i < r1; ++i) {
    std::vector<double> all(size_t(c.n));
    double scale = 0;
    for (int64_t j = 0; j < c.n; ++j) {
      double s = 0, sq = 0;
      for (int64_t l = 0; l < c.d; ++l) {
        double a = x[size_t(i * c.d + l)], b = x[size_t(j * c.d + l)];
        s += (a - b) * (a - b);
        sq += a * a + b * b;
      }
      all[size_t(j)] = s;
      scale = std::max(scale, sq);
    }
    std::vector<double> sorted;
    for (int64_t j = 0; j < c.n; ++j)
      if (j != i) sorted.push_back(all[size_t(j)]);
    std::sort(sorted.begin(), sorted.end());
    const double kth = sorted[size_t(c.k - 1)], tol = 1e-5 * (1 + kth) + 1e-6 * scale * 1e-3;
    std::vector<bool> listed(size_t(c.n), false);
    for (int p = 0; p < c.k; ++p) {
      int32_t j = ids[size_t((i - r0) * c.k + p)];
      ASSERT_TRUE(j >= 0 && j < c.n && j != i && !listed[size_t(j)]) << "row " << i << " slot " << p << ": id " << j;
      listed[size_t(j)] = true;
      EXPECT_LE(all[size_t(j)], kth + tol) << "row " << i << ": " << j << " is not among the nearest";
      EXPECT_NEAR(dist[size_t((i - r0) * c.k + p)], all[size_t(j)], tol) << "row " << i << " slot " << p;
      if (p) {
        EXPECT_LE(dist[size_t((i - r0) * c.k + p - 1)], dist[size_t((i - r0) * c.k + p)]) << "row " << i;
      }
    }
    for (int64_t j = 0; j < c.n; ++j)
      if (j != i && all[size_t(j)] < kth - tol) {
        EXPECT_TRUE(listed[size_t(j)]) << "row " << i << ": missed " << j << " (recall below 1)";
      }
  }
  EXPECT_EQ(stats.rows, r1 - r0);
  recomputed = stats.recomputed;
}

bool runnable() { return knn_subgroup_matrix_unsupported(*ctx(), 16, {.emulate = true}).empty(); }

// Runs each case (k = 0: drawn from `gen`), seeded and traced; prints the rows recomputed in f32
// where `report` (the device test: how often the f16 bound flags a row on real tensor cores).
void check_cases(std::vector<Case> cases, std::mt19937& gen, bool emulate, bool report) {
  for (auto& c : cases) {
    if (c.k == 0) c.k = int(1 + gen() % std::min<int64_t>(c.n - 1, 40));
    c.emulate = emulate;
    uint32_t seed = gen();
    SG_SEEDED(seed);
    SCOPED_TRACE("n " + std::to_string(c.n) + " d " + std::to_string(c.d) + " k " + std::to_string(c.k) + " kind " +
                 std::to_string(c.kind));
    int64_t recomputed = 0;
    check_case(c, seed, recomputed);
    if (report)
      std::printf("  n %lld d %lld k %d kind %d: %lld rows recomputed in f32\n", (long long)c.n, (long long)c.d, c.k,
                  c.kind, (long long)recomputed);
  }
}

}  // namespace

TEST(KnnSubgroupMatrix, FuzzedShapesMatchFloat64) {
  if (!runnable()) GTEST_SKIP() << knn_subgroup_matrix_unsupported(*ctx(), 16, {.emulate = true});
  std::mt19937 gen(34);
  // D up to 32 (two pipelines: DP = 16, 32): lavapipe takes ~10 s to compile each emulated one.
  std::vector<Case> cases = {{2, 1, 1, 0},
                             {70, 3, 5, 0},
                             {130, 17, 15, 1},
                             {97, 30, 90, 0},
                             {200, 5, 20, 2},
                             {150, 32, 7, 1, 0, 4096},         // several dispatches
                             {180, 8, 12, 0, 0, 0, 37, 121}};  // a row range
  for (int i = 0; i < 3; ++i) cases.push_back({int64_t(20 + gen() % 200), int64_t(1 + gen() % 32), 0, int(gen() % 3)});
  check_cases(cases, gen, true, false);
}

// Candidates = k: ties at the k-th distance (integer grid, duplicates) leave the bound no room, so
// rows are flagged and recomputed in f32; the lists stay exact.
TEST(KnnSubgroupMatrix, FlaggedRowsAreRecomputed) {
  if (!runnable()) GTEST_SKIP() << knn_subgroup_matrix_unsupported(*ctx(), 16, {.emulate = true});
  int64_t recomputed = 0;
  check_case({160, 6, 10, 2, 10}, 7, recomputed);
  EXPECT_GT(recomputed, 0);
  check_case({140, 12, 9, 1, 9}, 8, recomputed);
}

// Sets several times the list length: most candidates are turned away by the margin bar (a row's
// k-th key plus twice its error bound), on clusters, a tie-heavy grid and duplicates, across
// dispatches (a dispatch's start lowers the bar from the lists the last one left). Recall stays 1.
TEST(KnnSubgroupMatrix, MarginBarKeepsEveryNeighbour) {
  if (!runnable()) GTEST_SKIP() << knn_subgroup_matrix_unsupported(*ctx(), 16, {.emulate = true});
  std::mt19937 gen(35);
  check_cases({{700, 16, 10, 0, 24}, {600, 12, 10, 2, 40}, {640, 9, 10, 1, 32, 16384}}, gen, true, false);
}

// Sets environment variables for a scope and restores what was there (tests of the variants).
class EnvScope {
 public:
  explicit EnvScope(const std::vector<std::pair<std::string, std::string>>& vars) {
    for (const auto& [name, value] : vars) vars_.push_back(std::make_unique<EnvVar>(name.c_str(), value.c_str()));
  }

 private:
  std::vector<std::unique_ptr<EnvVar>> vars_;
};

// The staged kernel (points through workgroup panels) with queues of 12 (the default's 24 take it
// past lavapipe's 32 KiB of workgroup memory, where the unstaged kernel runs instead).
TEST(KnnSubgroupMatrix, StagedKernelMatchesFloat64) {
  if (!runnable()) GTEST_SKIP() << knn_subgroup_matrix_unsupported(*ctx(), 16, {.emulate = true});
  EnvScope env({{"SURFGRAD_KNN_SGMAT_QUEUE", "12,10"},
                {"SURFGRAD_KNN_SGMAT_STAGE", "1"},
                {"SURFGRAD_KNN_SGMAT_LAYOUT", "blocked"},
                {"SURFGRAD_KNN_SGMAT_PAD", "8"},
                {"SURFGRAD_KNN_SGMAT_SPLIT", "0"}});
  ASSERT_TRUE(knn_sgmat_staged(*ctx(), knn_sgmat_variant(), 32, false, false))
      << knn_sgmat_variant().describe() << " is not staged for D = 32 here";
  std::mt19937 gen(36);
  check_cases({{300, 30, 20, 0}, {260, 9, 12, 2, 40}, {220, 17, 30, 1, 0, 8192}}, gen, true, false);
}

// Split products (three a product: X̃·X̃ + X̃·r̃ + r̃·X̃) and their smaller error bound, on the staged
// kernel (D ≤ 16 and queues of 12: the second panel within lavapipe's 32 KiB); with the margin bar
// and several dispatches, on clusters, a tie-heavy grid and duplicates. Recall stays 1.
TEST(KnnSubgroupMatrix, SplitProductsMatchFloat64) {
  if (!runnable()) GTEST_SKIP() << knn_subgroup_matrix_unsupported(*ctx(), 16, {.emulate = true});
  EnvScope env({{"SURFGRAD_KNN_SGMAT_QUEUE", "12,10"},
                {"SURFGRAD_KNN_SGMAT_STAGE", "1"},
                {"SURFGRAD_KNN_SGMAT_LAYOUT", "blocked"},
                {"SURFGRAD_KNN_SGMAT_PAD", "8"},
                {"SURFGRAD_KNN_SGMAT_SPLIT", "1"}});
  ASSERT_TRUE(knn_sgmat_split(*ctx(), knn_sgmat_variant(), 16, false, false))
      << knn_sgmat_variant().describe() << " has no split products for D = 16 here";
  std::mt19937 gen(37);
  check_cases({{500, 16, 10, 0, 16}, {400, 9, 12, 2, 30}, {300, 13, 20, 1, 0, 8192}, {97, 5, 90, 0}}, gen, true, false);
}

TEST(KnnSubgroupMatrix, RefusesBadInput) {
  Tensor x = Tensor::zeros(ctx(), {10, 3});
  EXPECT_THROW(knn_exact_subgroup_matrix(x, 10, 0, 10, {.emulate = true}), Error);
  EXPECT_THROW(knn_exact_subgroup_matrix(x, 3, 4, 4, {.emulate = true}), Error);
  if (runnable()) {
    EXPECT_THROW(knn_exact_subgroup_matrix(x, 3, 0, 10, {.candidates = 2, .emulate = true}), Error);
  }
  for (const char* bad : {"-1", "257", "12x", "1000"}) {
    EnvVar extra("SURFGRAD_KNN_SGMAT_EXTRA", bad);
    EXPECT_THROW(knn_sgmat_variant(), Error) << bad;
  }
  {
    EnvVar extra("SURFGRAD_KNN_SGMAT_EXTRA", "32");
    EXPECT_EQ(knn_sgmat_variant().extra, 32);
  }
}

// The real builtins where the device has them (Dawn on a GPU with subgroup matrices: tensor
// cores round and accumulate in their own way; the bound must hold there too).
TEST(KnnSubgroupMatrix, DeviceBuiltinsMatchFloat64) {
  if (std::string why = knn_subgroup_matrix_unsupported(*ctx(), 64); !why.empty()) GTEST_SKIP() << why;
  std::mt19937 gen(35);
  std::vector<Case> cases = {
      {1000, 50, 90, 0}, {3000, 50, 15, 0}, {2000, 64, 30, 1}, {1500, 7, 12, 2}, {700, 100, 5, 0, 0, 1 << 16}};
  for (int i = 0; i < 4; ++i)
    cases.push_back({int64_t(50 + gen() % 2000), int64_t(1 + gen() % 130), int(1 + gen() % 40), int(gen() % 3)});
  check_cases(cases, gen, false, true);
}

// The candidate kernel's workgroup memory is all arrays, each a multiple of 16 bytes where its
// length is a literal (the others are multiples of 64 rows or of 16-point panels). On the H100 two
// 4-byte scalars (merge_count, merge_total) put the staged kernel's point panels 8 bytes off the
// 16-byte alignment that subgroup-matrix loads need, whatever order the variables are declared in:
// every product was wrong (KnnSgmatDiag; BENCHMARKS.md, 2026-11-28). No GPU work: the source only.
TEST(KnnSubgroupMatrix, WorkgroupMemoryKeepsFragmentsAligned) {
  // Queues of 12 and D = 16: the staged and split kernels' sources within lavapipe's 32 KiB too.
  const KnnSgmatVariant variants[] = {{true, 8, true, false, 12, 10},
                                      {false, 8, true, false, 12, 10},
                                      {false, 8, true, true, 12, 10},
                                      {true, 8, false},
                                      {false, 0, false}};
  const std::regex decl(R"(var<workgroup> (\w+): ([^;]+);)"), literal(R"(^array<(u32|i32|f32|atomic<u32>), (\d+)u?>$)");
  for (const KnnSgmatVariant& v : variants) {
    const std::string wgsl = knn_sgmat_candidate_wgsl(*ctx(), 16, 32, false, false, false, true, false, v, true);
    EXPECT_NE(wgsl.find("var<workgroup> prod"), std::string::npos) << v.describe();
    EXPECT_EQ(knn_sgmat_staged(*ctx(), v, 16, false, false), v.staged) << v.describe();
    EXPECT_EQ(wgsl.find("subgroupMatrixLoad<TB, col_major>(&bpan[tj]") != std::string::npos, v.staged) << v.describe();
    EXPECT_EQ(wgsl.find("var<workgroup> rpan") != std::string::npos, v.split) << v.describe();
    int vars = 0;
    for (auto it = std::sregex_iterator(wgsl.begin(), wgsl.end(), decl); it != std::sregex_iterator(); ++it) {
      ++vars;
      const std::string name = (*it)[1].str(), type = (*it)[2].str();
      EXPECT_EQ(type.rfind("array<", 0), 0u) << v.describe() << ": workgroup scalar " << name << ": " << type;
      // A literal length: its bytes a multiple of 16. Otherwise one of the kernel's sizes, all
      // multiples of 64 rows or points or of 16-point panels.
      std::smatch m;
      if (std::regex_match(type, m, literal)) {
        EXPECT_EQ(std::stol(m[2].str()) * 4 % 16, 0) << v.describe() << ": " << name << ": " << type;
      } else {
        EXPECT_TRUE(std::regex_search(type, std::regex(R"(\b(BM|BN|BK|Q|SCRATCH|DPS|PS)\b)")))
            << v.describe() << ": " << name << ": " << type;
      }
    }
    EXPECT_GE(vars, 10) << v.describe();
  }
}

// Which exact kNN knn_exact_rows takes: the environment's 1 or 0, else NVIDIA adapters only, from
// kKnnSubgroupMatrixMinPoints rows and up to kKnnSubgroupMatrixMaxK neighbours; never where it
// cannot run. The rule on its own (every branch, whatever this machine's adapter), then through
// the environment on this adapter.
TEST(KnnSubgroupMatrix, ChooserFollowsTheEnvironmentAndTheAdapter) {
  const int64_t many = kKnnSubgroupMatrixMinPoints, few = many - 1;
  const int small = kKnnSubgroupMatrixMaxK, large = small + 1;
  EXPECT_TRUE(knn_subgroup_matrix_rule("", "nvidia NVIDIA H200", true, many, small));
  EXPECT_TRUE(knn_subgroup_matrix_rule("", "NVIDIA", true, 10 * many, 15));
  EXPECT_FALSE(knn_subgroup_matrix_rule("", "nvidia NVIDIA H200", false, many, small));  // cannot run
  EXPECT_FALSE(knn_subgroup_matrix_rule("", "nvidia NVIDIA H200", true, few, small));    // a few rows
  EXPECT_FALSE(knn_subgroup_matrix_rule("", "nvidia NVIDIA H200", true, many, large));   // large k
  // Points sorted by cell (knn_order.hpp): up to kKnnSubgroupMatrixMaxKOrdered.
  EXPECT_TRUE(knn_subgroup_matrix_rule("", "nvidia NVIDIA H200", true, many, large, true));
  EXPECT_TRUE(knn_subgroup_matrix_rule("", "nvidia NVIDIA H200", true, many, kKnnSubgroupMatrixMaxKOrdered, true));
  EXPECT_FALSE(knn_subgroup_matrix_rule("", "nvidia NVIDIA H200", true, many, kKnnSubgroupMatrixMaxKOrdered + 1, true));
  EXPECT_FALSE(knn_subgroup_matrix_rule("", "amd Radeon", true, many, small, true));
  EXPECT_FALSE(knn_subgroup_matrix_rule("", "amd Radeon", true, many, small));  // unchecked vendor
  EXPECT_TRUE(knn_subgroup_matrix_rule("1", "amd Radeon", true, 10, 128));
  EXPECT_FALSE(knn_subgroup_matrix_rule("1", "nvidia", false, many, small));
  EXPECT_FALSE(knn_subgroup_matrix_rule("0", "nvidia NVIDIA H200", true, many, small));
  for (const char* bad : {"yes", "2", "on", " 1"}) {
    try {
      knn_subgroup_matrix_rule(bad, "nvidia", true, many, small);
      ADD_FAILURE() << "SURFGRAD_KNN_SUBGROUP_MATRIX='" << bad << "' was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("SURFGRAD_KNN_SUBGROUP_MATRIX"), std::string::npos) << e.what();
    }
  }
  const gpu::Context& c = *ctx();
  const bool can = knn_subgroup_matrix_unsupported(c, 50).empty();
  {
    EnvVar env("SURFGRAD_KNN_SUBGROUP_MATRIX", "1");
    EXPECT_EQ(knn_subgroup_matrix_chosen(c, 1000, 50, 90), can);
  }
  {
    EnvVar env("SURFGRAD_KNN_SUBGROUP_MATRIX", "0");
    EXPECT_FALSE(knn_subgroup_matrix_chosen(c, many, 50, 15));
  }
  EnvVar env("SURFGRAD_KNN_SUBGROUP_MATRIX", "yes");
  EXPECT_THROW(knn_subgroup_matrix_chosen(c, many, 50, 15), Error);
}

// The ranges flagged rows are recomputed in: every flagged row inside one, runs closer than the
// gap merged, farther ones apart, nothing for no flags.
TEST(KnnSubgroupMatrix, FlaggedRowsAreRecomputedInFewRanges) {
  using R = std::vector<std::pair<int64_t, int64_t>>;
  auto flags = [](int64_t n, std::initializer_list<int64_t> on) {
    std::vector<int32_t> f(size_t(n), 0);
    for (int64_t i : on) f[size_t(i)] = 1;
    return f;
  };
  EXPECT_EQ(knn_sgmat_recompute_ranges(flags(100, {}), 10), R{});
  EXPECT_EQ(knn_sgmat_recompute_ranges(flags(100, {0, 1, 2, 99}), 10), (R{{0, 3}, {99, 100}}));
  EXPECT_EQ(knn_sgmat_recompute_ranges(flags(100, {5, 9, 14, 40}), 10), (R{{5, 15}, {40, 41}}));
  EXPECT_EQ(knn_sgmat_recompute_ranges(flags(100, {5, 16}), 10), (R{{5, 6}, {16, 17}}));  // 10 rows between
  EXPECT_EQ(knn_sgmat_recompute_ranges(flags(100, {5, 15}), 10), (R{{5, 16}}));           // 9 rows between
  std::mt19937 gen(8);
  std::vector<int32_t> f(100000, 0);
  for (int i = 0; i < 400; ++i) f[gen() % f.size()] = 1;  // scattered: 391 rows took 27 s a run at a time
  R r = knn_sgmat_recompute_ranges(f, kKnnSgmatRecomputeGap);
  EXPECT_EQ(r.size(), 1u);
  for (size_t i = 0; i < f.size(); ++i) {
    if (!f[i]) continue;
    bool inside = false;
    for (auto [a, b] : r) inside |= int64_t(i) >= a && int64_t(i) < b;
    ASSERT_TRUE(inside) << "row " << i;
  }
}
