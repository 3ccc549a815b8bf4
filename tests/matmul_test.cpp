// matmul against the float64 reference: any M, N, K (1, primes, non-multiples of 16),
// batched with broadcast batch axes, transposed and sliced operands read in place, 1-D promotion.
#include "tensor/matmul_problem.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

// C[b] = A[b] @ B[b] for C-order refs with broadcast batch axes.
Ref matmul_ref(const Ref& a, const Ref& b) {
  int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
  Shape ab(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  Shape batch = broadcast(ab, bb);
  Shape out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  Ref out{out_shape, std::vector<double>(size_t(shape_numel(out_shape)))};
  int64_t nb = shape_numel(batch);
  auto offset = [&](const Shape& own, const std::vector<int64_t>& c) {
    int64_t o = 0, k = 1;
    size_t lead = c.size() - own.size();
    for (size_t d = own.size(); d-- > 0;) {
      o += (own[d] == 1 ? 0 : c[lead + d]) * k;
      k *= own[d];
    }
    return o;
  };
  for (int64_t bi = 0; bi < nb; ++bi) {
    auto c = unravel(bi, batch);
    int64_t ao = offset(ab, c) * M * K, bo = offset(bb, c) * K * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += a.v[size_t(ao + i * K + k)] * b.v[size_t(bo + k * N + j)];
        out.v[size_t((bi * M + i) * N + j)] = s;
      }
  }
  return out;
}

Ref transpose_ref(const Ref& x) {
  int64_t R = x.shape[x.shape.size() - 2], C = x.shape.back();
  int64_t batch = x.numel() / std::max<int64_t>(1, R * C);
  Ref t{x.shape, std::vector<double>(x.v.size())};
  std::swap(t.shape[t.shape.size() - 1], t.shape[t.shape.size() - 2]);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) t.v[size_t(b * R * C + j * R + i)] = x.v[size_t(b * R * C + i * C + j)];
  return t;
}

}  // namespace

TEST(Matmul, Fuzzed2D) {
  std::mt19937 gen(51);
  static const int64_t sizes[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 64, 97, 130};
  for (DType dt : float_dtypes())
    for (int trial = 0; trial < 12; ++trial) {
      uint32_t seed = gen();
      SG_SEEDED(seed);
      int64_t M = sizes[gen() % 12], K = sizes[gen() % 12], N = sizes[gen() % 12];
      Ref a = random_ref({M, K}, seed, dt, -1, 1), b = random_ref({K, N}, seed + 1, dt, -1, 1);
      Tol tol = dt == DType::f16 ? Tol{5e-3 * std::sqrt(double(K)), 5e-3} : Tol{1e-5 * std::sqrt(double(K)), 1e-5};
      EXPECT_TRUE(close(read(upload(a, dt).matmul(upload(b, dt))), matmul_ref(a, b), tol,
                        std::string("matmul ") + dtype_name(dt) + " " + std::to_string(M) + "x" + std::to_string(K) +
                            "x" + std::to_string(N)));
    }
}

TEST(Matmul, TransposedOperandsWithoutCopies) {
  Ref a = random_ref({37, 19}, 52, DType::f32), b = random_ref({23, 37}, 53, DType::f32);
  // aᵀ @ bᵀ: both operands are transposed views (column stride ≠ 1).
  Tensor at = upload(a, DType::f32).t(), bt = upload(b, DType::f32).t();
  EXPECT_FALSE(at.is_contiguous());
  EXPECT_TRUE(close(read(at.matmul(bt)), matmul_ref(transpose_ref(a), transpose_ref(b)), {1e-4, 1e-5}, "aT @ bT"));
  // Sliced operand (offset and row stride).
  Ref c = random_ref({40, 50}, 54, DType::f32);
  Tensor cs = upload(c, DType::f32).slice(0, 3, 22).slice(1, 5, 42);  // [19, 37]
  Ref cs_ref{{19, 37}, {}};
  for (int i = 3; i < 22; ++i)
    for (int j = 5; j < 42; ++j) cs_ref.v.push_back(c.v[size_t(i * 50 + j)]);
  EXPECT_TRUE(close(read(cs.matmul(upload(a, DType::f32).t().t().slice(0, 0, 37))), matmul_ref(cs_ref, a), {1e-4, 1e-5},
                    "sliced @ a"));
}

TEST(Matmul, BatchedWithBroadcast) {
  std::mt19937 gen(55);
  struct Case {
    Shape a, b;
  };
  std::vector<Case> cases = {{{3, 5, 7}, {3, 7, 4}},
                             {{2, 1, 6, 9}, {4, 9, 5}},
                             {{5, 8}, {2, 3, 8, 3}},
                             {{1, 17, 3}, {6, 3, 17}},
                             {{2, 3, 1, 4}, {2, 1, 4, 2}}};
  for (auto& c : cases) {
    uint32_t seed = gen();
    SG_SEEDED(seed);
    Ref a = random_ref(c.a, seed, DType::f32), b = random_ref(c.b, seed + 1, DType::f32);
    EXPECT_TRUE(close(read(matmul(upload(a, DType::f32), upload(b, DType::f32))), matmul_ref(a, b), {1e-4, 1e-5},
                      "batched " + shape_str(c.a) + " @ " + shape_str(c.b)));
  }
  // Batched with a transposed operand: bᵀ of [3, 4, 7] is [3, 7, 4].
  Ref a = random_ref({3, 5, 7}, 56, DType::f32), b = random_ref({3, 4, 7}, 57, DType::f32);
  EXPECT_TRUE(close(read(matmul(upload(a, DType::f32), upload(b, DType::f32).transpose(1, 2))),
                    matmul_ref(a, transpose_ref(b)), {1e-4, 1e-5}, "a @ bT batched"));
}

TEST(Matmul, VectorPromotion) {
  Ref m = random_ref({4, 6}, 58, DType::f32), v = random_ref({6}, 59, DType::f32), w = random_ref({4}, 60, DType::f32);
  Tensor mt = upload(m, DType::f32);
  Ref mv = read(mt.matmul(upload(v, DType::f32)));
  ASSERT_EQ(mv.shape, Shape({4}));
  Ref v2 = v;
  v2.shape = {6, 1};
  Ref want = matmul_ref(m, v2);
  want.shape = {4};
  EXPECT_TRUE(close(mv, want, {1e-5, 1e-5}, "matrix @ vector"));
  Ref wm = read(upload(w, DType::f32).matmul(mt));
  ASSERT_EQ(wm.shape, Shape({6}));
  Ref dot = read(upload(v, DType::f32).matmul(upload(v, DType::f32)));
  ASSERT_EQ(dot.shape, Shape({}));
  double d = 0;
  for (double x : v.v) d += x * x;
  EXPECT_NEAR(dot.v[0], d, 1e-5);
}

TEST(Matmul, TrainingSizedShapes) {
  // The MNIST demo's shapes, forward and both backward products.
  Ref a = random_ref({128, 784}, 61, DType::f32), b = random_ref({784, 256}, 62, DType::f32);
  Ref g = random_ref({128, 256}, 63, DType::f32);
  Tensor ta = upload(a, DType::f32), tb = upload(b, DType::f32), tg = upload(g, DType::f32);
  Tol tol{1e-4 * std::sqrt(784.0), 1e-4};
  EXPECT_TRUE(close(read(ta.matmul(tb)), matmul_ref(a, b), tol, "x @ W"));
  EXPECT_TRUE(close(read(tg.matmul(tb.t())), matmul_ref(g, transpose_ref(b)), tol, "g @ W^T"));
  EXPECT_TRUE(
      close(read(ta.t().matmul(tg)), matmul_ref(transpose_ref(a), g), {1e-4 * std::sqrt(128.0), 1e-4}, "x^T @ g"));
}

TEST(Matmul, HeuristicTilesAtEdgeShapes) {
  // The heuristic's choices for large products, whichever adapter runs the test: 128×128 tiles
  // (8×8 per thread, BK 16, double-buffered; GPUs) and the direct 8×128 form (CPU adapters).
  // Edges in M, N and K, and a transposed operand.
  Ref a = random_ref({515, 77}, 71, DType::f32), b = random_ref({77, 530}, 72, DType::f32);
  Ref bt = random_ref({530, 77}, 73, DType::f32);
  Tensor ta = upload(a, DType::f32), tb = upload(b, DType::f32), tbt = upload(bt, DType::f32).t();
  Tol tol{1e-5 * std::sqrt(77.0), 1e-5};
  for (TiledParams p : {TiledParams{128, 128, 16, 8, 8, true, 8, true}, TiledParams{8, 128, 0, 8, 8, false, 1, true}}) {
    if (!tiled_unsupported(*ctx(), p, DType::f32).empty()) continue;
    MatmulProblem straight = make_problem(ta, tb), transposed = make_problem(ta, tbt);
    run_tiled(straight, p);
    run_tiled(transposed, p);
    EXPECT_TRUE(close(read(straight.c), matmul_ref(a, b), tol, p.str() + ": 515x77 @ 77x530"));
    EXPECT_TRUE(close(read(transposed.c), matmul_ref(a, transpose_ref(bt)), tol, p.str() + ": 515x77 @ (530x77)^T"));
  }
  EXPECT_TRUE(close(read(ta.matmul(tb)), matmul_ref(a, b), tol, "Tensor::matmul 515x77 @ 77x530"));
}

TEST(Matmul, Vec4StagingAtEdgeShapes) {
  // Row-major operands with K and N multiples of 4 take vec4 staging loads in the tiled kernel
  // (edges in M, N and K; batched; an offset view); a transposed operand falls back to scalars.
  Tol tol{1e-5 * std::sqrt(76.0), 1e-5};
  for (TiledParams p : {TiledParams{128, 128, 16, 8, 8, true, 8, true}, TiledParams{64, 64, 16, 4, 4, false, 1, true},
                        TiledParams{128, 128, 8, 8, 8, true, 1, true}, TiledParams{128, 256, 8, 8, 8, true, 1, true}}) {
    if (!tiled_unsupported(*ctx(), p, DType::f32).empty()) continue;
    Ref a = random_ref({515, 76}, 91, DType::f32), b = random_ref({76, 532}, 92, DType::f32);
    MatmulProblem plain = make_problem(upload(a, DType::f32), upload(b, DType::f32));
    run_tiled(plain, p);
    EXPECT_TRUE(close(read(plain.c), matmul_ref(a, b), tol, p.str() + ": 515x76 @ 76x532"));
    Ref ab = random_ref({3, 130, 64}, 93, DType::f32), bb = random_ref({3, 64, 36}, 94, DType::f32);
    MatmulProblem batched = make_problem(upload(ab, DType::f32), upload(bb, DType::f32));
    run_tiled(batched, p);
    Ref want{{3, 130, 36}, std::vector<double>(3 * 130 * 36)};
    for (int64_t q = 0; q < 3; ++q)
      for (int64_t i = 0; i < 130; ++i)
        for (int64_t j = 0; j < 36; ++j) {
          double s = 0;
          for (int64_t k = 0; k < 64; ++k)
            s += ab.v[size_t((q * 130 + i) * 64 + k)] * bb.v[size_t((q * 64 + k) * 36 + j)];
          want.v[size_t((q * 130 + i) * 36 + j)] = s;
        }
    EXPECT_TRUE(close(read(batched.c), want, {1e-5 * 8, 1e-5}, p.str() + ": batched 3x130x64 @ 3x64x36"));
    // Rows 4.. of a [519, 76] tensor (offset 4·76: vec4 loads), and columns 1.. of a [515, 77]
    // one (offset 1, row stride 77: scalar loads).
    Ref big = random_ref({519, 76}, 95, DType::f32), wide = random_ref({515, 77}, 96, DType::f32);
    MatmulProblem rows = make_problem(upload(big, DType::f32).slice(0, 4, 519), upload(b, DType::f32));
    MatmulProblem cols = make_problem(upload(wide, DType::f32).slice(1, 1, 77), upload(b, DType::f32));
    run_tiled(rows, p);
    run_tiled(cols, p);
    Ref rows_ref{{515, 76}, {big.v.begin() + 4 * 76, big.v.end()}}, cols_ref{{515, 76}, {}};
    for (int64_t i = 0; i < 515; ++i)
      cols_ref.v.insert(cols_ref.v.end(), wide.v.begin() + i * 77 + 1, wide.v.begin() + (i + 1) * 77);
    EXPECT_TRUE(close(read(rows.c), matmul_ref(rows_ref, b), tol, p.str() + ": rows 4.. of a view"));
    EXPECT_TRUE(close(read(cols.c), matmul_ref(cols_ref, b), tol, p.str() + ": columns 1.. of a view"));
  }
}

TEST(Matmul, CheckedAndTrustedKernelsAgree) {
  // The matmul kernels run without runtime bounds checks by default (their guards keep every
  // access in bounds); a context that keeps the checks must give the same bits.
  auto checked = gpu::Context::create({.quiet = true, .trust_validated_kernels = false});
  EXPECT_FALSE(checked->trusts_validated_kernels());
  Ref a = random_ref({37, 300}, 81, DType::f32), b = random_ref({300, 129}, 82, DType::f32);
  std::vector<float> av(a.v.begin(), a.v.end()), bv(b.v.begin(), b.v.end());
  auto on = [&](const gpu::ContextPtr& c) {
    return Tensor::from_vector(c, av, {37, 300}).matmul(Tensor::from_vector(c, bv, {300, 129})).to_vector<float>();
  };
  EXPECT_EQ(on(checked), on(ctx()));
}

TEST(Matmul, SplitKMatchesFloat64) {
  // C = Σ_s A[:, K_s]·B[K_s, :] over equal slices of K, as one batched product of views and a sum:
  // odd M and N, 2, 3, 4 and 8 slices, a transposed A read in place (its slices are strided views).
  struct Case {
    int64_t M, N, K;
    int slices;
  };
  for (Case c : {Case{5, 37, 96, 2}, Case{5, 37, 96, 3}, Case{7, 130, 1024, 8}, Case{64, 68, 256, 4}}) {
    Ref a = random_ref({c.M, c.K}, 81, DType::f32), b = random_ref({c.K, c.N}, 82, DType::f32);
    Ref at = random_ref({c.K, c.M}, 83, DType::f32);
    Tensor ta = upload(a, DType::f32), tb = upload(b, DType::f32), tat = upload(at, DType::f32).t();
    Tol tol{1e-5 * std::sqrt(double(c.K)), 1e-5};
    std::string what = std::to_string(c.M) + "x" + std::to_string(c.K) + " @ " + std::to_string(c.K) + "x" +
                       std::to_string(c.N) + " in " + std::to_string(c.slices) + " slices";
    // The heuristic's tiles for a slice, and a second tile shape (the autotuner may pick any).
    for (TiledParams p :
         {matmul_params(ctx(), DType::f32, c.M, c.N, c.K / c.slices), TiledParams{32, 32, 16, 2, 2, false, 1, true}}) {
      MatmulProblem straight = make_problem(ta, tb), transposed = make_problem(tat, tb);
      run_split_k(straight, c.slices, p);
      run_split_k(transposed, c.slices, p);
      EXPECT_TRUE(close(read(straight.c), matmul_ref(a, b), tol, what + " " + p.str()));
      EXPECT_TRUE(
          close(read(transposed.c), matmul_ref(transpose_ref(at), b), tol, what + " (A transposed) " + p.str()));
    }
  }
  MatmulProblem uneven = make_problem(Tensor::zeros(ctx(), {4, 10}), Tensor::zeros(ctx(), {10, 4}));
  EXPECT_THROW(run_split_k(uneven, 3, matmul_params(ctx(), DType::f32, 4, 4, 10)), Error);  // K = 10, 3 slices
}

TEST(Matmul, SplitKOnlyWhereTheTilesCannotFillAGpu) {
  TiledParams t64{64, 64, 16, 4, 4, false, 1, true}, t128{128, 128, 16, 8, 8, true, 8, true};
  // The skinny shape: 64 tiles of 64×64 → 8 slices of 512 (512 workgroups).
  EXPECT_EQ(split_k_factor(false, DType::f32, 64, 4096, 4096, 1, t64), 8);
  EXPECT_EQ(split_k_factor(false, DType::f32, 4096, 4096, 4096, 1, t128), 1);  // 1,024 tiles already
  EXPECT_EQ(split_k_factor(false, DType::f32, 64, 4096, 256, 1, t64), 1);      // K too short to split
  EXPECT_EQ(split_k_factor(false, DType::f32, 64, 4096, 4100, 1, t64), 1);     // slices would not be vec4-aligned
  EXPECT_EQ(split_k_factor(false, DType::f32, 64, 4096, 1024, 1, t64), 4);     // K/S stays ≥ 256
  EXPECT_EQ(split_k_factor(true, DType::f32, 64, 4096, 4096, 1, t64), 1);      // CPU adapters: never
  EXPECT_EQ(split_k_factor(false, DType::f16, 64, 4096, 4096, 1, t64), 1);     // f16 partials would round
  EXPECT_EQ(split_k_factor(false, DType::f32, 64, 4096, 4096, 3, t64), 1);     // batched products: never
}
