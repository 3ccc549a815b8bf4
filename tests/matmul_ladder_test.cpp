// Every rung of the matmul ladder on fuzzed shapes (sizes 1, primes, non-multiples of every
// tile), batched with broadcasting and with transposed operands, against the float64 host
// product. A rung the adapter cannot run is reported as skipped, never as passed.
#include "tensor/matmul_problem.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

class Ladder : public ::testing::TestWithParam<std::string> {};

const MatmulVariant& variant(const std::string& name) {
  for (const auto& v : matmul_variants())
    if (v.name == name) return v;
  throw std::runtime_error("no variant " + name);
}

std::vector<std::string> names() {
  std::vector<std::string> n;
  for (const auto& v : matmul_variants()) n.push_back(v.name);
  return n;
}

}  // namespace

TEST_P(Ladder, MatchesFloat64Reference) {
  const MatmulVariant& v = variant(GetParam());
  bool f16 = v.name.rfind("f16", 0) == 0;
  DType dt = f16 ? DType::f16 : DType::f32;
  if (f16 && !ctx()->features().shader_f16) GTEST_SKIP() << v.name << ": adapter has no shader-f16";
  std::mt19937 gen(7);
  static const int64_t sizes[] = {1, 7, 16, 33, 64, 100, 131};
  struct Case {
    Shape a, b;
    bool ta, tb;
  };
  std::vector<Case> cases;
  for (int i = 0; i < 6; ++i) {
    int64_t M = sizes[gen() % 7], N = sizes[gen() % 7], K = sizes[gen() % 7];
    cases.push_back({{M, K}, {K, N}, false, false});
  }
  cases.push_back({{2, 33, 20}, {20, 36}, false, false});       // batched A, shared B
  cases.push_back({{3, 1, 17, 12}, {4, 12, 8}, false, false});  // broadcast batch axes
  cases.push_back({{40, 24}, {48, 40}, true, true});            // Aᵀ·Bᵀ read in place
  int ran = 0;
  for (const Case& c : cases) {
    uint32_t seed = gen();
    SG_SEEDED(seed);
    Tensor a = upload(random_ref(c.a, seed, dt, -1, 1), dt), b = upload(random_ref(c.b, seed + 1, dt, -1, 1), dt);
    if (c.ta) a = a.t();
    if (c.tb) b = b.t();
    MatmulProblem p = make_problem(a, b);
    std::string why = v.unsupported(p);
    if (!why.empty()) continue;
    p.c.assign(scalar_like(p.c, NAN));  // poison: every output must be written
    v.prepare(p)();
    double err = matmul_error(p, 200, seed);
    EXPECT_LE(err, v.tolerance) << v.name << " " << shape_str(a.shape()) << " @ " << shape_str(b.shape());
    // Every element written (the sampled check covers batch 0 only).
    for (float x : p.c.to_vector<float>()) ASSERT_FALSE(std::isnan(x)) << v.name << ": an output was not written";
    ++ran;
  }
  if (ran == 0) {
    Tensor a = Tensor::ones(ctx(), {4, 4}, dt);
    GTEST_SKIP() << v.name << ": " << v.unsupported(make_problem(a, a));
  }
}

INSTANTIATE_TEST_SUITE_P(Matmul, Ladder, ::testing::ValuesIn(names()), [](const auto& info) {
  std::string n = info.param;
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
});
