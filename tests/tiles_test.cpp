// Tile programs (surfgrad/tiles.hpp): every primitive's forward against the float64 host
// reference on fuzzed tile and array shapes (tiles that hang over the arrays' edges, tile sizes
// that are not multiples of the workgroup), independent checks of the reference itself (copies,
// matmul, column sums by atomic adds), every adjoint by gradcheck, and the errors before any
// GPU work.
#include "surfgrad/tiles.hpp"

#include <limits>

#include "surfgrad/demos.hpp"
#include "surfgrad/gradcheck.hpp"
#include "tensor/unary_ops.hpp"
#include "test_util.hpp"
#include "tiles_test_util.hpp"

using namespace sgtest;
using namespace surfgrad;
namespace tl = surfgrad::tiles;

namespace {

// Runs a kernel of one output on the GPU (the output starting at `start` everywhere, so that
// elements a store must not touch are visible) and compares with the float64 reference.
void expect_reference(const tl::Kernel& k, const std::vector<Tensor>& inputs, const Shape& out, tl::Grid grid,
                      const std::string& what, Tol tol = {2e-5, 2e-5}, double start = 7.0) {
  Tensor y = Tensor::full(ctx(), out, start);
  k.launch(inputs, {y}, grid);
  std::vector<HostArray> hin;
  for (const Tensor& t : inputs) hin.push_back(HostArray::from(t));
  HostArray want = k.reference(hin, {HostArray::full(out, start)}, grid)[0];
  EXPECT_TRUE(close(read(y), ref_of(want), tol, what));
}

}  // namespace

// A copy through tiles must reproduce every element, for tile shapes and thread counts that
// divide nothing (the edges are masked), and for rank-3 arrays with the batch on grid axis z.
TEST(TileForward, LoadStoreCopiesEveryElement) {
  std::mt19937 gen(11);
  for (int trial = 0; trial < 12; ++trial) {
    int64_t batch = pick(gen, 1, 3), rows = pick(gen, 1, 37), cols = pick(gen, 1, 29);
    int tr = pick(gen, 1, 13), tc = pick(gen, 1, 11), threads = kThreads[trial % 5];
    tl::Kernel k("copy", threads);
    tl::Array x = k.input("x"), y = k.output("y");
    tl::At at{tl::Coord::block(0), tl::Coord::block(1), tl::Coord::block(2)};
    tl::tile_store(y, tl::tile_load(x, {tr, tc}, at), at);
    Shape s = trial % 2 ? Shape{batch, rows, cols} : Shape{rows, cols};
    Tensor xt = rand_tensor(s, 100 + uint32_t(trial));
    Tensor yt = Tensor::full(ctx(), s, 7.0);
    tl::Grid grid{blocks(rows, tr), blocks(cols, tc), uint32_t(trial % 2 ? batch : 1)};
    k.launch({xt}, {yt}, grid);
    std::string what = "copy " + shape_str(s) + " by " + std::to_string(tr) + "×" + std::to_string(tc) + " tiles, " +
                       std::to_string(threads) + " threads";
    EXPECT_TRUE(close(read(yt), read(xt), {0, 0}, what));
  }
}

// A grid that covers only part of the array leaves the rest untouched; a tile at a constant
// position past the array's end reads zeros.
TEST(TileForward, StoresOnlyInsideTheGridAndArray) {
  tl::Kernel k("partial", 32);
  tl::Array x = k.input("x"), y = k.output("y");
  tl::At at{tl::Coord::block(0), 1};
  tl::tile_store(y, tl::tile_load(x, {5, 4}, at), at);
  Tensor xt = rand_tensor({13, 7}, 5);
  Tensor yt = Tensor::full(ctx(), {13, 7}, 7.0);
  k.launch({xt}, {yt}, {2, 1, 1});  // rows 0..9 of columns 4..6 (the tile's 4th column is outside)
  Ref got = read(yt), xr = read(xt);
  for (int64_t r = 0; r < 13; ++r)
    for (int64_t c = 0; c < 7; ++c) {
      bool written = r < 10 && c >= 4;
      EXPECT_EQ(got.v[size_t(r * 7 + c)], written ? xr.v[size_t(r * 7 + c)] : 7.0) << r << "," << c;
    }
}

// Each primitive against the float64 reference on fuzzed shapes.
TEST(TileForward, EachPrimitiveMatchesFloat64Reference) {
  std::mt19937 gen(23);
  for (int trial = 0; trial < 6; ++trial) {
    int rows = pick(gen, 1, 19), cols = pick(gen, 1, 17), threads = kThreads[trial % 5];
    int64_t R = rows * 2 + pick(gen, 0, rows - 1), C = cols + pick(gen, 0, cols - 1);  // not multiples
    tl::Grid grid{blocks(R, rows), blocks(C, cols), 1};
    tl::At at{tl::Coord::block(0), tl::Coord::block(1)};
    Tensor a = rand_tensor({R, C}, 200 + uint32_t(trial)), b = rand_tensor({R, C}, 300 + uint32_t(trial));
    std::string shapes = " tile " + std::to_string(rows) + "×" + std::to_string(cols) + " of " + shape_str({R, C}) +
                         ", " + std::to_string(threads) + " threads";
    for (tl::Binary op : {tl::Binary::add, tl::Binary::sub, tl::Binary::mul}) {
      tl::Kernel k("binary", threads);
      tl::Array x = k.input("x"), y = k.input("y"), out = k.output("out");
      tl::tile_store(out, tl::tile_map(op, tl::tile_load(x, {rows, cols}, at), tl::tile_load(y, {rows, cols}, at)), at);
      expect_reference(k, {a, b}, {R, C}, grid, "binary " + std::to_string(int(op)) + shapes);
    }
    {  // a constant factor, on either side
      tl::Kernel k("scale", threads);
      tl::Array x = k.input("x"), out = k.output("out");
      tl::Tile t = tl::tile_load(x, {rows, cols}, at);
      tl::tile_store(out, -0.37 * t + t * 1e-3, at);
      expect_reference(k, {a}, {R, C}, grid, "scale" + shapes);
    }
    {  // transpose: the tile at (i, j) of x lands at (j, i) of out
      tl::Kernel k("transpose", threads);
      tl::Array x = k.input("x"), out = k.output("out");
      tl::tile_store(out, tl::tile_transpose(tl::tile_load(x, {rows, cols}, at)), {at.col, at.row});
      expect_reference(k, {a}, {C, R}, grid, "transpose" + shapes);
    }
    for (int axis : {0, 1})
      for (tl::Reduce op : {tl::Reduce::sum, tl::Reduce::max}) {
        // reduce, then broadcast back and add to the tile: both primitives in one kernel.
        tl::Kernel k("reduce_broadcast", threads);
        tl::Array x = k.input("x"), out = k.output("out");
        tl::Tile t = tl::tile_load(x, {rows, cols}, at);
        tl::tile_store(out, t + tl::tile_broadcast(tl::tile_reduce(op, t, axis), {rows, cols}), at);
        expect_reference(k, {a}, {R, C}, grid,
                         "reduce " + std::to_string(int(op)) + " axis " + std::to_string(axis) + shapes, {1e-4, 1e-4});
      }
    {  // whole-tile sum into a [blocks_r, blocks_c] array
      tl::Kernel k("tile_sum", threads);
      tl::Array x = k.input("x"), out = k.output("out");
      tl::tile_store(out, tl::tile_sum(tl::tile_load(x, {rows, cols}, at)), at);
      expect_reference(k, {a}, {int64_t(grid.x), int64_t(grid.y)}, grid, "tile_sum" + shapes, {1e-4, 1e-4});
    }
    {  // matmul of a row tile of x and a tile of w (inner extent `cols`, some of it past w's edge)
      int n = pick(gen, 1, 9);
      Tensor w = rand_tensor({C, n}, 400 + uint32_t(trial));
      tl::Kernel k("matmul", threads);
      tl::Array x = k.input("x"), wa = k.input("w"), out = k.output("out");
      tl::Tile prod = tl::tile_matmul(tl::tile_load(x, {rows, cols}, {tl::Coord::block(0), tl::Coord::block(1)}),
                                      tl::tile_load(wa, {cols, n}, {tl::Coord::block(1), 0}));
      tl::tile_atomic_add(out, prod, {tl::Coord::block(0), 0});
      expect_reference(k, {a, w}, {R, n}, grid, "matmul" + shapes, {1e-4, 1e-4}, 0.0);
    }
  }
}

// Every op of the unary table through tile_map, on the op's well-conditioned range.
TEST(TileForward, UnaryTableOps) {
  for (const UnarySpec& spec : unary_specs()) {
    tl::Kernel k("unary", 64);
    tl::Array x = k.input("x"), out = k.output("out");
    tl::At at{tl::Coord::block(0), 0};
    tl::tile_store(out, tl::tile_map(tl::Unary(int(spec.op)), tl::tile_load(x, {9, 11}, at)), at);
    Tensor a = rand_tensor({20, 11}, 31, spec.lo, spec.hi);
    expect_reference(k, {a}, {20, 11}, {3, 1, 1}, spec.name, {1e-5, 1e-4});
  }
}

// The reference itself against independent host computations: a whole matrix product built
// from row tiles (HostArray::matmul of the full matrices), and column sums gathered by atomic
// adds from every block (HostArray::sum).
TEST(TileForward, MatmulAndAtomicSumsAgainstWholeArrays) {
  std::mt19937 gen(41);
  for (int trial = 0; trial < 4; ++trial) {
    int64_t M = pick(gen, 1, 70), K = pick(gen, 1, 24), N = pick(gen, 1, 20);
    int tm = pick(gen, 1, 16), threads = kThreads[trial % 5];
    Tensor a = rand_tensor({M, K}, 500 + uint32_t(trial)), b = rand_tensor({K, N}, 600 + uint32_t(trial));
    tl::Kernel k("rows_matmul", threads);
    tl::Array x = k.input("a"), w = k.input("b"), c = k.output("c");
    tl::At rows{tl::Coord::block(0), 0};
    tl::tile_store(c, tl::tile_matmul(tl::tile_load(x, {tm, int(K)}, rows), tl::tile_load(w, {int(K), int(N)})), rows);
    Tensor ct = Tensor::zeros(ctx(), {M, N});
    k.launch({a, b}, {ct}, {blocks(M, tm), 1, 1});
    HostArray want = HostArray::from(a).matmul(HostArray::from(b));
    EXPECT_TRUE(close(read(ct), ref_of(want), {1e-4, 1e-4},
                      "tiled matmul M,K,N " + std::to_string(M) + "," + std::to_string(K) + "," + std::to_string(N)));

    tl::Kernel s("column_sums", threads);
    tl::Array sx = s.input("x"), sums = s.output("sums");
    tl::tile_atomic_add(sums, tl::tile_sum(tl::tile_load(sx, {tm, int(K)}, rows), 0));
    Tensor st = Tensor::zeros(ctx(), {1, K});
    s.launch({a}, {st}, {blocks(M, tm), 1, 1});
    EXPECT_TRUE(close(read(st), ref_of(HostArray::from(a).sum({0}, true)), {1e-4, 1e-4}, "column sums"));
  }
}

// ---- adjoints

TEST(TileGradcheck, EachPrimitive) {
  std::mt19937 gen(61);
  for (int trial = 0; trial < 2; ++trial) {
    int rows = pick(gen, 2, 6), cols = pick(gen, 2, 5), threads = kThreads[(trial + 1) % 5];
    int64_t R = rows + pick(gen, 1, rows - 1), C = cols + pick(gen, 1, cols - 1);
    tl::Grid grid{blocks(R, rows), blocks(C, cols), 1};
    tl::At at{tl::Coord::block(0), tl::Coord::block(1)};
    Tensor a = rand_tensor({R, C}, 700 + uint32_t(trial)), b = rand_tensor({R, C}, 800 + uint32_t(trial));
    std::string shapes =
        " (tile " + std::to_string(rows) + "×" + std::to_string(cols) + " of " + shape_str({R, C}) + ")";
    for (tl::Binary op : {tl::Binary::add, tl::Binary::sub, tl::Binary::mul}) {
      tl::Kernel k("binary", threads);
      tl::Array x = k.input("x"), y = k.input("y"), out = k.output("out");
      tl::tile_store(out, tl::tile_map(op, tl::tile_load(x, {rows, cols}, at), tl::tile_load(y, {rows, cols}, at)), at);
      check_grad(k, {a, b}, {R, C}, grid, "binary " + std::to_string(int(op)) + shapes);
    }
    {  // x · x: one tile feeds both operands (adjoints must add up)
      tl::Kernel k("square", threads);
      tl::Array x = k.input("x"), out = k.output("out");
      tl::Tile t = tl::tile_load(x, {rows, cols}, at);
      tl::tile_store(out, t * t, at);
      check_grad(k, {a}, {R, C}, grid, "x*x" + shapes);
    }
    {
      tl::Kernel k("transpose", threads);
      tl::Array x = k.input("x"), out = k.output("out");
      tl::tile_store(out, tl::tile_transpose(tl::tile_load(x, {rows, cols}, at)), {at.col, at.row});
      check_grad(k, {a}, {C, R}, grid, "transpose" + shapes);
    }
    {  // x · s: a loss's mean, say (a whole-tile sum scaled, added into one word)
      tl::Kernel k("scale", threads);
      tl::Array x = k.input("x"), out = k.output("out");
      tl::Tile t = tl::tile_load(x, {rows, cols}, at);
      tl::tile_atomic_add(out, tl::tile_sum(t * t) * (1.0 / double(R * C)));
      check_grad(k, {a}, {1, 1}, grid, "scaled sum of squares" + shapes);
    }
    for (int axis : {0, 1})
      for (tl::Reduce op : {tl::Reduce::sum, tl::Reduce::max}) {
        tl::Kernel k("reduce", threads);
        tl::Array x = k.input("x"), out = k.output("out");
        tl::Tile t = tl::tile_load(x, {rows, cols}, at);
        tl::Tile red = tl::tile_reduce(op, t, axis);
        tl::tile_store(out, tl::tile_broadcast(red, {rows, cols}) * t, at);
        check_grad(k, {a}, {R, C}, grid,
                   "reduce " + std::to_string(int(op)) + " axis " + std::to_string(axis) + shapes);
      }
    {  // a weight tile every block loads: its gradient gathers every block's share atomically
      int n = pick(gen, 1, 4);
      Tensor w = rand_tensor({C, n}, 900 + uint32_t(trial));
      tl::Kernel k("matmul", threads);
      tl::Array x = k.input("x"), wa = k.input("w"), out = k.output("out");
      tl::At rows_at{tl::Coord::block(0), 0};
      tl::Tile prod = tl::tile_matmul(tl::tile_load(x, {rows, int(C)}, rows_at), tl::tile_load(wa, {int(C), n}));
      tl::tile_atomic_add(out, prod, rows_at);
      check_grad(k, {a, w}, {R, n}, {grid.x, 1, 1}, "matmul" + shapes);

      // The same product with w read in place (global memory) from rows 2 … of a wider packed
      // array, its gradient added atomically; a bias row packed at row 1 of the same array.
      tl::Kernel kg("matmul_in_place", threads);
      tl::Array gx = kg.input("x"), gw = kg.input("packed"), gout = kg.output("out");
      tl::Tile z = tl::tile_matmul(tl::tile_load(gx, {rows, int(C)}, rows_at), gw, n, 2);
      z = z + tl::tile_broadcast(tl::tile_load(gw, {1, n}, {tl::Coord::element(1), 0}), {rows, n});
      tl::tile_store(gout, tl::tile_map(tl::Unary::tanh, z), rows_at);
      Tensor packed = rand_tensor({C + 3, n + 2}, 950 + uint32_t(trial));
      expect_reference(kg, {a, packed}, {R, n}, {grid.x, 1, 1}, "matmul in place" + shapes, {1e-4, 1e-4});
      check_grad(kg, {a, packed}, {R, n}, {grid.x, 1, 1}, "matmul in place" + shapes);
      expect_error([&] { kg.launch({a, rand_tensor({C + 1, n}, 1)}, {Tensor::zeros(ctx(), {R, n})}, {1, 1, 1}); },
                   ErrorKind::Shape, {"tile_matmul", "'packed'", shape_str({C + 2, n}), shape_str({C + 1, n})});
    }
  }
}

// The three ways a tile matmul is generated (emit_matmul): one output a thread, four of a row
// (width a multiple of 4), 4×4 blocks (both a multiple of 4 and a block for every thread). The
// shapes pick each in the forward product and in both adjoints (dA = dC·Bᵀ, dB = Aᵀ·dC), with B
// as a tile and read in place; rows off the tile height.
TEST(TileGradcheck, MatmulThreadBlocks) {
  struct Case {
    int tm, K, N;
  };
  for (Case c : {Case{16, 8, 32}, Case{4, 16, 64}, Case{5, 6, 7}, Case{8, 12, 4}}) {
    const int threads = 32;
    const int64_t R = 2 * c.tm + 3;
    std::string what = " tm " + std::to_string(c.tm) + ", K " + std::to_string(c.K) + ", N " + std::to_string(c.N);
    Tensor x = rand_tensor({R, c.K}, 1100 + uint32_t(c.tm)), w = rand_tensor({c.K, c.N}, 1200 + uint32_t(c.N));
    tl::At rows_at{tl::Coord::block(0), 0};
    tl::Grid grid{blocks(R, c.tm), 1, 1};
    tl::Kernel k("matmul_blocks", threads);
    tl::Array xa = k.input("x"), wa = k.input("w"), out = k.output("out");
    tl::tile_store(out, tl::tile_matmul(tl::tile_load(xa, {c.tm, c.K}, rows_at), tl::tile_load(wa, {c.K, c.N})),
                   rows_at);
    expect_reference(k, {x, w}, {R, c.N}, grid, "matmul" + what, {1e-4, 1e-4});
    check_grad(k, {x, w}, {R, c.N}, grid, "matmul" + what);
    // In place: B staged in workgroup memory (where it fits), and read in global memory.
    for (bool staged : {true, false}) {
      tl::Kernel kg("matmul_blocks_in_place", threads);
      kg.set_weight_staging(staged);
      tl::Array gx = kg.input("x"), gw = kg.input("w"), gout = kg.output("out");
      tl::tile_store(gout, tl::tile_matmul(tl::tile_load(gx, {c.tm, c.K}, rows_at), gw, c.N), rows_at);
      std::string how = staged ? " (staged)" : " (global)";
      EXPECT_EQ(kg.stages_weights(*ctx(), true), staged) << what;
      EXPECT_EQ(kg.weight_stage_bytes(), uint64_t(4 * c.K * (c.N + 1)));
      EXPECT_EQ(kg.backward_wgsl(false, staged).find("weight_stage[") != std::string::npos, staged);
      expect_reference(kg, {x, w}, {R, c.N}, grid, "matmul in place" + how + what, {1e-4, 1e-4});
      check_grad(kg, {x, w}, {R, c.N}, grid, "matmul in place" + how + what);
    }
  }
}

// Rank-3 arrays: one workgroup per batch element (grid axis z) and row tile (axis x), a matrix
// shared by the whole batch, a row-sum reduction; the batch's gradients land in the right slices.
TEST(TileGradcheck, BatchedOnGridAxisZ) {
  const int64_t batch = 3, rows = 7, cols = 4;
  const int tm = 3;
  tl::Kernel k("batched", 16);
  tl::Array x = k.input("x"), w = k.input("w"), y = k.output("y");
  tl::At at{tl::Coord::block(0), 0, tl::Coord::block(2)};
  tl::Tile xt = tl::tile_load(x, {tm, int(cols)}, at);
  tl::Tile h = tl::tile_map(tl::Unary::sigmoid, tl::tile_matmul(xt, tl::tile_load(w, {int(cols), 2})));
  tl::tile_store(y, tl::tile_sum(h * h, 1), at);
  Tensor xs = rand_tensor({batch, rows, cols}, 12), ws = rand_tensor({cols, 2}, 13, -1, 1);
  tl::Grid grid{blocks(rows, tm), 1, uint32_t(batch)};
  expect_reference(k, {xs, ws}, {batch, rows, 1}, grid, "batched", {1e-5, 1e-4});
  check_grad(k, {xs, ws}, {batch, rows, 1}, grid, "batched");
}

TEST(TileGradcheck, UnaryTableOps) {
  for (const UnarySpec& spec : unary_specs()) {
    std::vector<std::pair<double, double>> ranges = {{spec.grad_lo, spec.grad_hi}};
    if (spec.kink_at_zero) ranges = {{spec.grad_lo, -0.1}, {0.1, spec.grad_hi}};
    for (auto [lo, hi] : ranges) {
      tl::Kernel k("unary", 32);
      tl::Array x = k.input("x"), out = k.output("out");
      tl::At at{tl::Coord::block(0), 0};
      tl::tile_store(out, tl::tile_map(tl::Unary(int(spec.op)), tl::tile_load(x, {3, 4}, at)), at);
      check_grad(k, {rand_tensor({5, 4}, 33, lo, hi)}, {5, 4}, {2, 1, 1}, spec.name);
    }
  }
}

// A whole kernel: a two-layer perceptron on row tiles, tanh(x·W1 + b1)·W2, every block reading
// the same weights.
TEST(TileGradcheck, WholeKernelTwoLayerPerceptron) {
  const int tm = 3, din = 4, hidden = 5, dout = 2;
  tl::Kernel k("mlp2", 32);
  tl::Array x = k.input("x", /*differentiable=*/false), w1 = k.input("w1"), b1 = k.input("b1"), w2 = k.input("w2"),
            y = k.output("y");
  tl::At rows{tl::Coord::block(0), 0};
  tl::Tile xt_tile = tl::tile_load(x, {tm, din}, rows);  // separate statements: nodes in this order
  tl::Tile h = tl::tile_matmul(xt_tile, tl::tile_load(w1, {din, hidden}));
  h = tl::tile_map(tl::Unary::tanh, h + tl::tile_broadcast(tl::tile_load(b1, {1, hidden}), {tm, hidden}));
  tl::tile_store(y, tl::tile_matmul(h, tl::tile_load(w2, {hidden, dout})), rows);
  int64_t n = 8;  // three blocks, the last one partial
  Tensor xt = rand_tensor({n, din}, 1);
  std::vector<Tensor> params = {rand_tensor({din, hidden}, 2, -1, 1), rand_tensor({1, hidden}, 3, -1, 1),
                                rand_tensor({hidden, dout}, 4, -1, 1)};
  // x is data: the kernel's first argument, but no parameter of the check.
  auto f = [&](const auto& p) {
    using T = typename std::decay_t<decltype(p)>::value_type;
    std::vector<T> all;
    if constexpr (std::is_same_v<T, Var>)
      all.push_back(Var(xt));
    else
      all.push_back(HostArray::from(xt));
    all.insert(all.end(), p.begin(), p.end());
    return k(all, {n, dout}, {3, 1, 1});
  };
  GradcheckResult r = gradcheck(f, params);
  EXPECT_TRUE(r.ok) << r.report;
  // The tape gives the constant no gradient.
  Var xv = Var::param(xt);
  k(std::vector<Var>{xv, Var::param(params[0]), Var::param(params[1]), Var::param(params[2])}, {n, dout}, {3, 1, 1})
      .sum()
      .backward();
  EXPECT_FALSE(xv.grad().defined());
  // The generated kernels say what they compute.
  std::string fwd = k.forward_wgsl(), bwd = k.backward_wgsl();
  EXPECT_NE(fwd.find("tile_matmul(t0_x, t1_w1)"), std::string::npos) << fwd;
  EXPECT_NE(bwd.find("adjoint of t2_matmul"), std::string::npos) << bwd;
  EXPECT_NE(bwd.find("d_w1"), std::string::npos) << bwd;
  EXPECT_EQ(bwd.find("d_x"), std::string::npos) << bwd;
  // x wants no gradient: neither its adjoint tile nor the product that would feed it exists.
  EXPECT_EQ(bwd.find("a0_x"), std::string::npos) << bwd;
  // Portable f32 atomics are compare-and-swap loops; with the device's atomic<f32>, atomicAdd.
  EXPECT_NE(bwd.find("atomicCompareExchangeWeak(&d_w1["), std::string::npos) << bwd;
  std::string native = k.backward_wgsl(true);
  EXPECT_NE(native.find("atomicAdd(&d_w1["), std::string::npos) << native;
  EXPECT_EQ(native.find("atomicCompareExchangeWeak"), std::string::npos) << native;
}

// Tiles share workgroup memory by lifetime: a chain of doublings keeps two tiles live in the
// forward (the one read, the one made) and, as the adjoint of an add reads no values, at most
// three in the backward; the result and its gradient stay right.
TEST(TileMemory, TilesShareSlotsByLifetime) {
  tl::Kernel k("doublings", 64);
  tl::Array x = k.input("x"), y = k.output("y");
  tl::At at{tl::Coord::block(0), 0};
  tl::Tile t = tl::tile_load(x, {6, 5}, at);
  for (int i = 0; i < 10; ++i) t = t + t;
  tl::tile_store(y, t, at);
  const uint64_t tile = 6 * 5 * 4;
  EXPECT_EQ(k.workgroup_bytes(false), 2 * tile);
  EXPECT_LE(k.workgroup_bytes(true), 3 * tile);
  Tensor a = rand_tensor({11, 5}, 77);
  expect_reference(k, {a}, {11, 5}, {2, 1, 1}, "doublings", {1e-5, 1e-6});
  GradcheckOptions opt;
  opt.atol = 0.1;  // d y / d x = 1024 everywhere, exact in f32; the finite differences carry rounding
  auto f = [&](const auto& xs) { return k(xs, {11, 5}, {2, 1, 1}); };
  GradcheckResult r = gradcheck(f, {a}, opt);
  EXPECT_TRUE(r.ok) << r.report;
}

// f16 inputs (weights in half precision): read as f32, so the forward equals the reference on
// the f16-rounded values, and the gradient, f32, equals the one of the same kernel declared f32
// and given those rounded values (itself checked against finite differences). Through autograd
// the f16 copy is a cast of f32 parameters, and the cast passes the f32 gradient through.
TEST(TileF16, WeightsReadAsF32GradientF32) {
  if (!ctx()->features().shader_f16) GTEST_SKIP() << "this adapter has no shader-f16";
  std::mt19937 gen(83);
  for (int trial = 0; trial < 3; ++trial) {
    int rows = pick(gen, 2, 9), K = pick(gen, 3, 13), n = trial == 2 ? 8 : pick(gen, 1, 7),
        threads = kThreads[trial + 2];
    int64_t R = rows * 2 + pick(gen, 0, rows - 1);
    tl::Grid grid{blocks(R, rows), 1, 1};
    tl::At at{tl::Coord::block(0), 0};
    auto build = [&](DType dtype) {
      tl::Kernel k("f16_weights", threads);
      tl::Array x = k.input("x"), w = k.input("packed", true, dtype), y = k.output("y");
      tl::Tile z = tl::tile_matmul(tl::tile_load(x, {rows, K}, at), w, n, 1);  // in place (n = 8: 1×4 form)
      z = z + tl::tile_broadcast(tl::tile_load(w, {1, n}), {rows, n});         // row 0: the bias
      tl::tile_store(y, tl::tile_map(tl::Unary::tanh, z), at);
      return k;
    };
    tl::Kernel k16 = build(DType::f16), k32 = build(DType::f32);
    Tensor x = rand_tensor({R, K}, 1000 + uint32_t(trial), -1, 1), w = rand_tensor({K + 1, n}, 1100 + uint32_t(trial));
    Tensor w16 = w.cast(DType::f16), rounded = w16.cast(DType::f32);
    std::string what = "f16 weights, tile " + std::to_string(rows) + "×" + std::to_string(K) + ", n " +
                       std::to_string(n) + ", " + std::to_string(threads) + " threads";
    EXPECT_NE(k16.forward_wgsl().find("array<f16>"), std::string::npos);
    expect_reference(k16, {x, w16}, {R, n}, grid, what, {1e-5, 1e-5});
    check_grad(k32, {x, rounded}, {R, n}, grid, what + " (f32 twin)");
    Var master = Var::param(w), master32 = Var::param(rounded);
    Var y16 = k16({Var(x), master.cast(DType::f16)}, {R, n}, grid), y32 = k32({Var(x), master32}, {R, n}, grid);
    (y16 * y16).sum().backward();
    (y32 * y32).sum().backward();
    ASSERT_EQ(master.grad().dtype(), DType::f32);
    EXPECT_TRUE(close(read(master.grad()), read(master32.grad()), {1e-5, 1e-5}, what + " gradient"));
    expect_error([&] { k16.launch({x, w}, {Tensor::zeros(ctx(), {R, n})}, grid); }, ErrorKind::DType,
                 {"'f16_weights'", "'packed'", "must be f16", "f32"});
  }
  tl::Kernel bad("bad_dtype", 32);
  expect_error([&] { (void)bad.input("ids", false, DType::i32); }, ErrorKind::DType, {"'ids'", "i32", "f32 or f16"});
}

// One kernel for forward and backward (a training step's loss and gradient) gives what the two
// kernels give: the outputs as launch() writes them (a stored tile and an atomically added
// scalar) and the input gradients as launch_backward adds them, weights staged or not.
TEST(TileForwardBackward, OneKernelEqualsTwo) {
  const int rows = 6, K = 10, N = 8;
  const int64_t R = 23;
  tl::Grid grid{blocks(R, rows), 1, 1};
  tl::At at{tl::Coord::block(0), 0};
  Tensor x = rand_tensor({R, K}, 1301, -1, 1), w = rand_tensor({K, N}, 1302, -1, 1);
  Tensor dy = rand_tensor({R, N}, 1303), dl = Tensor::full(ctx(), {1, 1}, 0.7);
  for (bool staged : {true, false}) {
    tl::Kernel k("forward_backward", 64);
    k.set_weight_staging(staged);
    tl::Array xa = k.input("x", /*differentiable=*/false), wa = k.input("w"), y = k.output("y"),
              loss = k.output("loss");
    tl::Tile z = tl::tile_map(tl::Unary::tanh, tl::tile_matmul(tl::tile_load(xa, {rows, K}, at), wa, N));
    tl::tile_store(y, z, at);
    tl::tile_atomic_add(loss, tl::tile_sum(z * z) * 0.5);
    Tensor y1 = Tensor::zeros(ctx(), {R, N}), l1 = Tensor::zeros(ctx(), {1, 1}), g1 = Tensor::zeros(ctx(), {K, N});
    Tensor y2 = Tensor::zeros(ctx(), {R, N}), l2 = Tensor::zeros(ctx(), {1, 1}), g2 = Tensor::zeros(ctx(), {K, N});
    k.launch({x, w}, {y1, l1}, grid);
    k.launch_backward({x, w}, {dy, dl}, {g1}, grid);
    ctx()->flush();
    uint64_t before = ctx()->pending_dispatches();
    k.launch_forward_backward({x, w}, {y2, l2}, {dy, dl}, {g2}, grid);
    EXPECT_EQ(ctx()->pending_dispatches() - before, 1u);
    std::string what = staged ? " (staged)" : " (global)";
    EXPECT_TRUE(close(read(y2), read(y1), {1e-6, 1e-6}, "outputs" + what));
    EXPECT_TRUE(close(read(l2), read(l1), {1e-5, 1e-6}, "loss" + what));
    EXPECT_TRUE(close(read(g2), read(g1), {1e-5, 1e-6}, "gradient" + what));
    EXPECT_NE(k.forward_backward_wgsl().find("out_loss"), std::string::npos);
    expect_error([&] { k.launch_forward_backward({x, w}, {y2}, {dy, dl}, {g2}, grid); }, ErrorKind::Value,
                 {"2 outputs declared, 1 tensors"});
  }
}

// ---- errors, before any GPU work

TEST(TileErrors, ShapeMismatchesNamePrimitiveAndShapes) {
  tl::Kernel k("bad", 32);
  tl::Array x = k.input("x");
  tl::Tile a = tl::tile_load(x, {4, 3}), b = tl::tile_load(x, {3, 4});
  expect_error([&] { (void)(a + b); }, ErrorKind::Shape, {"'bad'", "tile_map", "4×3", "3×4"});
  expect_error([&] { (void)tl::tile_matmul(a, a); }, ErrorKind::Shape, {"tile_matmul", "4×3", "(3)", "(4)"});
  expect_error([&] { (void)tl::tile_broadcast(a, {4, 5}); }, ErrorKind::Shape, {"tile_broadcast", "4×3", "4×5"});
  expect_error([&] { (void)tl::tile_reduce(tl::Reduce::sum, a, 2); }, ErrorKind::Value, {"tile_reduce", "axis 2"});
  expect_error([&] { tl::tile_store(x, a); }, ErrorKind::Value, {"tile_store", "'x' is an input"});
  expect_error([&] { (void)tl::tile_load(x, {0, 3}); }, ErrorKind::Shape, {"tile_load", "empty"});
  expect_error([&] { (void)(a * std::numeric_limits<double>::infinity()); }, ErrorKind::Value,
               {"tile_scale", "finite"});
  tl::Kernel other("other", 32);
  tl::Tile c = tl::tile_load(other.input("z"), {4, 3});
  expect_error([&] { (void)(a + c); }, ErrorKind::Value, {"different kernels"});
}

TEST(TileErrors, RefusedBeforeAnyGpuWork) {
  Tensor x = rand_tensor({8, 8}, 1), y = Tensor::zeros(ctx(), {8, 8});
  Tensor xi = Tensor::zeros(ctx(), {8, 8}, DType::i32), x1 = Tensor::zeros(ctx(), {8});
  ctx()->flush();
  uint64_t allocations = ctx()->pool_stats().allocations;
  // 96×96 f32 tiles: 36,864 bytes each, over every adapter's workgroup memory limit we run on
  // (16 KiB in browsers, 32 KiB on lavapipe, 48 KiB on the H100 with two of them).
  tl::Kernel big("big_tiles", 64);
  tl::Array bx = big.input("x"), by = big.output("y");
  tl::Tile t = tl::tile_load(bx, {96, 96});
  tl::tile_store(by, t + t);
  expect_error([&] { big.launch({x}, {y}, {1, 1, 1}); }, ErrorKind::LimitExceeded,
               {"'big_tiles'", "t0_x", "96×96", "36864 bytes", "73728 bytes", "maxComputeWorkgroupStorageSize",
                std::to_string(ctx()->limits().max_compute_workgroup_storage_size)});
  expect_error([&] { (void)big(std::vector<Var>{Var::param(x)}, {8, 8}, {1, 1, 1}); }, ErrorKind::LimitExceeded,
               {"'big_tiles'", "workgroup memory"});
  // A forward that fits but whose backward (values + adjoints) does not is refused up front
  // when a gradient is wanted: y = t·t keeps two tiles live in the forward, three in the
  // backward (t, the adjoint of t·t and the adjoint of t).
  int side = int(std::sqrt(double(ctx()->limits().max_compute_workgroup_storage_size) / 4 / 2.5));
  tl::Kernel half("half_fits", 64);
  tl::Array hx = half.input("x"), hy = half.output("y");
  tl::Tile ht = tl::tile_load(hx, {side, side});
  tl::tile_store(hy, ht * ht);
  EXPECT_EQ(half.workgroup_bytes(false), uint64_t(2 * side * side * 4));
  EXPECT_EQ(half.workgroup_bytes(true), uint64_t(3 * side * side * 4));
  expect_error([&] { (void)half(std::vector<Var>{Var::param(x)}, {8, 8}, {1, 1, 1}); }, ErrorKind::LimitExceeded,
               {"(backward)", "values and adjoints"});

  tl::Kernel k("copy", 32);
  tl::Array kx = k.input("x"), ky = k.output("y");
  tl::tile_store(ky, tl::tile_load(kx, {4, 4}));
  expect_error([&] { k.launch({xi}, {y}, {1, 1, 1}); }, ErrorKind::DType, {"'copy'", "'x'", "f32", "i32[8, 8]"});
  expect_error([&] { k.launch({x1}, {y}, {1, 1, 1}); }, ErrorKind::Shape, {"'x'", "[batch, rows, cols]"});
  expect_error([&] { k.launch({x, x}, {y}, {1, 1, 1}); }, ErrorKind::Value, {"1 inputs declared, 2 tensors"});
  expect_error([&] { k.launch({x}, {y}, {0, 1, 1}); }, ErrorKind::LimitExceeded, {"grid 0×1×1"});
  tl::Kernel wide("wide", 32);  // 5 inputs: 5 + 1 + 5 bindings backward
  std::vector<tl::Array> ins;
  for (int i = 0; i < 5; ++i) ins.push_back(wide.input("x" + std::to_string(i)));
  tl::Tile sum5 = tl::tile_load(ins[0], {4, 4});
  for (int i = 1; i < 5; ++i) sum5 = sum5 + tl::tile_load(ins[size_t(i)], {4, 4});
  tl::tile_store(wide.output("y"), sum5);
  std::vector<Var> vs(5, Var::param(x));
  expect_error([&] { (void)wide(vs, {8, 8}, {1, 1, 1}); }, ErrorKind::LimitExceeded,
               {"'wide' (backward)", "11 tensors", "differentiable = false"});
  EXPECT_EQ(ctx()->pending_dispatches(), 0u);
  EXPECT_EQ(ctx()->pool_stats().allocations, allocations);
}

// ---- the fused MLP demo

// The fused network computes the same function as the unfused one from the same parameters, and
// both learn (the gradients themselves are checked above, on a whole kernel and per primitive).
TEST(TileMlp, FusedMatchesUnfusedAndLearns) {
  demos::TileMlpOptions o;
  o.side = 12;  // 144 pixels: 18 blocks of 8
  o.tile_rows = 8;
  o.threads = 128;
  o.hidden = 16;
  o.layers = 2;
  o.steps = 80;
  o.lr = 1e-2;
  o.weights = "f32";  // the same numbers as the unfused network (f16 weights: the next test)
  o.fused = true;
  auto fused = demos::train_tile_mlp(ctx(), o);  // one kernel a step (loss and gradient)
  o.one_kernel = false;
  auto autograd = demos::train_tile_mlp(ctx(), o);  // the autograd op: forward, then backward kernel
  o.fused = false;
  auto unfused = demos::train_tile_mlp(ctx(), o);
  EXPECT_NEAR(fused.first_loss, unfused.first_loss, 1e-5 + 1e-4 * unfused.first_loss);
  // The same sums in one kernel or two, added atomically in whatever order the blocks come.
  EXPECT_NEAR(fused.first_loss, autograd.first_loss, 1e-6 * autograd.first_loss);
  ASSERT_EQ(fused.first_gradient.size(), autograd.first_gradient.size());
  for (size_t i = 0; i < fused.first_gradient.size(); ++i)
    EXPECT_NEAR(fused.first_gradient[i], autograd.first_gradient[i], 1e-8 + 1e-5 * std::abs(autograd.first_gradient[i]))
        << "packed element " << i;
  EXPECT_LT(fused.dispatches_per_step, autograd.dispatches_per_step);
  // The backward kernel: the same gradient at the initial parameters, in the packed layout.
  ASSERT_EQ(fused.first_gradient.size(), unfused.first_gradient.size());
  float scale = 0;
  for (float g : unfused.first_gradient) scale = std::max(scale, std::abs(g));
  EXPECT_GT(scale, 0.0f);
  // (This caught a race: a slot reused while the atomic adds before it still read it.)
  size_t mismatches = 0, first = 0;
  for (size_t i = 0; i < fused.first_gradient.size(); ++i)
    if (!(std::abs(fused.first_gradient[i] - unfused.first_gradient[i]) <= 1e-4f * scale) && mismatches++ == 0)
      first = i;
  EXPECT_EQ(mismatches, 0u) << "first at packed element " << first << ": fused " << fused.first_gradient[first]
                            << ", unfused " << unfused.first_gradient[first];
  ASSERT_EQ(fused.losses.size(), 11u);  // step 1, then 10 groups of 8
  EXPECT_EQ(fused.losses.back().step, 80);
  EXPECT_EQ(fused.fitted.size(), size_t(12 * 12 * 3));
  EXPECT_LT(fused.final_loss, 0.5 * fused.first_loss);
  EXPECT_LT(unfused.final_loss, 0.5 * unfused.first_loss);
  EXPECT_LT(fused.dispatches_per_step, unfused.dispatches_per_step);
  EXPECT_GT(fused.workgroup_bytes, 0u);
  EXPECT_NE(fused.forward_wgsl.find("tile_matmul(t0_coords, params[rows 0 +2, cols 0 +16] in global memory)"),
            std::string::npos)
      << fused.forward_wgsl;
  EXPECT_NE(fused.backward_wgsl.find("d_params"), std::string::npos);
  // The loss is in the kernel: a scaled whole-tile sum added into one word.
  EXPECT_NE(fused.forward_wgsl.find("f32(0.00231481483)"), std::string::npos) << "1/(3·144) as the loss's factor";
  EXPECT_EQ(fused.weights, "f32");
}

// f16 weights (mixed precision), and a tile height that does not divide the pixels (the loss's
// mask column): the same loss as the unfused f32 network to f16's precision, and it learns. The
// gradient differs by more than f16's 2^-11: where rounding moves a pre-activation across 0, a
// ReLU's derivative flips for that pixel. So it is held to 5% in norm (measured: 2%); that the
// f16 read itself is exact is TileF16's test.
TEST(TileMlp, F16WeightsAndRaggedLastBlock) {
  if (!ctx()->features().shader_f16) GTEST_SKIP() << "this adapter has no shader-f16";
  demos::TileMlpOptions o;
  o.side = 11;  // 121 pixels: 17 blocks of 7, the last one holding 2
  o.hidden = 16;
  o.layers = 2;
  o.tile_rows = 7;
  o.steps = 60;
  o.lr = 1e-2;
  o.weights = "f32";
  auto exact = demos::train_tile_mlp(ctx(), o);
  o.weights = "auto";
  auto half = demos::train_tile_mlp(ctx(), o);
  o.fused = false;
  auto unfused = demos::train_tile_mlp(ctx(), o);
  EXPECT_EQ(half.weights, "f16");
  EXPECT_NEAR(exact.first_loss, unfused.first_loss, 1e-5 + 1e-4 * unfused.first_loss) << "the masked last block";
  EXPECT_NEAR(half.first_loss, unfused.first_loss, 1e-2 * unfused.first_loss);
  float scale = 0, worst_exact = 0;
  double norm = 0, apart = 0;
  for (size_t i = 0; i < unfused.first_gradient.size(); ++i) {
    scale = std::max(scale, std::abs(unfused.first_gradient[i]));
    worst_exact = std::max(worst_exact, std::abs(exact.first_gradient[i] - unfused.first_gradient[i]));
    norm += double(unfused.first_gradient[i]) * unfused.first_gradient[i];
    apart += std::pow(double(half.first_gradient[i]) - unfused.first_gradient[i], 2);
  }
  EXPECT_LE(worst_exact, 1e-4f * scale);
  EXPECT_LE(std::sqrt(apart / norm), 0.05);
  EXPECT_GT(apart, 0.0) << "f16 weights changed nothing: were they f16?";
  EXPECT_LT(half.final_loss, 0.6 * half.first_loss);
  EXPECT_NE(half.forward_wgsl.find("in_params: array<f16>"), std::string::npos);
  o.fused = true;
  o.weights = "f64";
  expect_error([&] { (void)demos::train_tile_mlp(ctx(), o); }, ErrorKind::Value, {"weights 'f64'", "f32, f16 or auto"});
}
