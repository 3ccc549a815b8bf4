// tile_view and tile_assign (surfgrad/tiles.hpp): the forward against the kernel's float64 host
// reference and against element loops written here, on fuzzed tile shapes, block shapes and
// offsets (1×1 blocks, blocks the size of the tile, odd sizes, arrays that the tiles overhang)
// with every thread count of kThreads; both adjoints by gradcheck; a whole kernel that splits a
// tile into halves, transforms them and rebuilds it; bad input refused before any GPU work.
#include <cmath>
#include <random>

#include "surfgrad/gradcheck.hpp"
#include "surfgrad/tiles.hpp"
#include "test_util.hpp"
#include "tiles_test_util.hpp"

using namespace sgtest;
using namespace surfgrad;
namespace tl = surfgrad::tiles;

namespace {

// Runs a one-output kernel (the output starting at 7 everywhere, so that elements no store may
// touch are visible) and compares with the kernel's float64 reference; returns what the GPU wrote.
Ref run_against_reference(const tl::Kernel& k, const std::vector<Tensor>& inputs, const Shape& out, tl::Grid grid,
                          const std::string& what, Tol tol) {
  Tensor y = Tensor::full(ctx(), out, 7.0);
  k.launch(inputs, {y}, grid);
  std::vector<HostArray> hin;
  for (const Tensor& t : inputs) hin.push_back(HostArray::from(t));
  HostArray want = k.reference(hin, {HostArray::full(out, 7.0)}, grid)[0];
  Ref got = read(y);
  EXPECT_TRUE(close(got, ref_of(want), tol, what + " (against the host reference)"));
  return got;
}

// x[r, c] of a rank-2 array, 0 outside it (what a tile over the edge reads).
double at_or_zero(const Ref& x, int64_t r, int64_t c) {
  int64_t rows = x.shape[0], cols = x.shape[1];
  return r < rows && c < cols ? x.v[size_t(r * cols + c)] : 0.0;
}

}  // namespace

// Per trial: a rows×cols tile at block (bx, by) of x, and a vr×vc block of it at (r0, c0).
// tile_view stores the block at block (bx, by) of a [bx·vr, by·vc] output; tile_assign writes a
// vr×vc tile of s (at block (bx, by) of s) into the block of x's tile and stores the result where
// x's tile came from. Copies are exact, so the tolerance is zero.
TEST(TileView, ForwardMatchesReferenceOnFuzzedBlocks) {
  std::mt19937 gen(150);
  for (int trial = 0; trial < 10; ++trial) {
    int rows = pick(gen, 1, 13), cols = pick(gen, 1, 11), threads = kThreads[trial % 5];
    int vr = pick(gen, 1, rows), vc = pick(gen, 1, cols);
    if (trial == 0) rows = cols = vr = vc = 1;  // 1×1 everything
    if (trial == 1) vr = rows, vc = cols;       // the whole tile
    if (trial == 2) vr = vc = 1;                // a single element
    int r0 = pick(gen, 0, rows - vr), c0 = pick(gen, 0, cols - vc);
    int64_t R = rows * 2 + pick(gen, 0, rows - 1), C = cols + pick(gen, 0, cols - 1);  // tiles overhang
    tl::Grid grid{blocks(R, rows), blocks(C, cols), 1};
    tl::At at{tl::Coord::block(0), tl::Coord::block(1)};
    std::string what = "block " + std::to_string(vr) + "×" + std::to_string(vc) + " at (" + std::to_string(r0) + ", " +
                       std::to_string(c0) + ") of a " + std::to_string(rows) + "×" + std::to_string(cols) +
                       " tile of " + shape_str({R, C}) + ", " + std::to_string(threads) + " threads";
    Tensor x = rand_tensor({R, C}, 1000 + uint32_t(trial));
    Ref xr = read(x);
    {
      tl::Kernel k("view", threads);
      tl::Array xa = k.input("x"), out = k.output("out");
      tl::tile_store(out, tl::tile_view(tl::tile_load(xa, {rows, cols}, at), {vr, vc}, r0, c0), at);
      Shape os = {int64_t(grid.x) * vr, int64_t(grid.y) * vc};
      Ref got = run_against_reference(k, {x}, os, grid, "tile_view, " + what, {0, 0});
      Ref want{os, std::vector<double>(size_t(os[0] * os[1]))};
      for (int64_t r = 0; r < os[0]; ++r)
        for (int64_t c = 0; c < os[1]; ++c)
          want.v[size_t(r * os[1] + c)] = at_or_zero(xr, (r / vr) * rows + r0 + r % vr, (c / vc) * cols + c0 + c % vc);
      EXPECT_TRUE(close(got, want, {0, 0}, "tile_view (element loops), " + what));
    }
    {
      int64_t SR = int64_t(grid.x) * vr - pick(gen, 0, vr - 1), SC = int64_t(grid.y) * vc;  // s's last tile short
      Tensor s = rand_tensor({SR, SC}, 1100 + uint32_t(trial));
      Ref sr = read(s);
      tl::Kernel k("assign", threads);
      tl::Array xa = k.input("x"), sa = k.input("s"), out = k.output("out");
      tl::Tile dst = tl::tile_load(xa, {rows, cols}, at);
      tl::tile_store(out, tl::tile_assign(dst, tl::tile_load(sa, {vr, vc}, at), r0, c0), at);
      Ref got = run_against_reference(k, {x, s}, {R, C}, grid, "tile_assign, " + what, {0, 0});
      Ref want = xr;
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c) {
          int64_t br = r / rows, tr = r % rows - r0, bc = c / cols, tc = c % cols - c0;
          if (tr >= 0 && tr < vr && tc >= 0 && tc < vc)
            want.v[size_t(r * C + c)] = at_or_zero(sr, br * vr + tr, bc * vc + tc);
        }
      EXPECT_TRUE(close(got, want, {0, 0}, "tile_assign (element loops), " + what));
    }
  }
}

// A view of a view, and an assign whose source is a view of its own destination (a block moved
// within the tile): the result reads the destination's old values.
TEST(TileView, ViewsOfViewsAndBlocksMovedWithinATile) {
  const int rows = 7, cols = 9;
  tl::Kernel k("move_block", 32);
  tl::Array xa = k.input("x"), out = k.output("out");
  tl::At at{tl::Coord::block(0), 0};
  tl::Tile t = tl::tile_load(xa, {rows, cols}, at);
  tl::Tile inner = tl::tile_view(tl::tile_view(t, {5, 6}, 1, 2), {3, 4}, 2, 1);  // t[3 .. 5, 3 .. 6]
  tl::tile_store(out, tl::tile_assign(t, inner, 1, 4), at);                      // into t[1 .. 3, 4 .. 7]
  Tensor x = rand_tensor({2 * rows, cols}, 5);
  Ref got = run_against_reference(k, {x}, {2 * rows, cols}, {2, 1, 1}, "block moved", {0, 0});
  Ref xr = read(x), want = xr;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = 0; c < 4; ++c)
        want.v[size_t((b * rows + 1 + r) * cols + 4 + c)] = xr.v[size_t((b * rows + 3 + r) * cols + 3 + c)];
  EXPECT_TRUE(close(got, want, {0, 0}, "block moved (element loops)"));
}

// tile_view's adjoint: two overlapping views of one tile multiplied (so x's adjoint collects both
// contributions where they overlap, and nothing outside them); tile_assign's: dst used again after
// the assign, src a nonlinear function of its input, and the degenerate assign of a whole tile by
// itself (every gradient goes through src).
TEST(TileView, GradcheckEachPrimitive) {
  std::mt19937 gen(151);
  for (int trial = 0; trial < 5; ++trial) {
    int rows = pick(gen, 2, 6), cols = pick(gen, 2, 6), threads = kThreads[trial];
    int vr = pick(gen, 1, rows - 1), vc = pick(gen, 1, cols);
    int64_t R = rows + pick(gen, 1, rows - 1), C = cols;
    tl::Grid grid{blocks(R, rows), 1, 1};
    tl::At at{tl::Coord::block(0), 0};
    std::string what = std::to_string(vr) + "×" + std::to_string(vc) + " blocks of " + std::to_string(rows) + "×" +
                       std::to_string(cols) + " tiles, " + std::to_string(threads) + " threads";
    Tensor x = rand_tensor({R, C}, 1200 + uint32_t(trial)), s = rand_tensor({2 * vr, vc}, 1300 + uint32_t(trial));
    {
      tl::Kernel k("views", threads);
      tl::Array xa = k.input("x"), out = k.output("out");
      tl::Tile t = tl::tile_load(xa, {rows, cols}, at);
      tl::Tile a = tl::tile_view(t, {vr, vc}, 0, cols - vc), b = tl::tile_view(t, {vr, vc}, 1, 0);
      tl::tile_store(out, a * b, at);
      check_grad(k, {x}, {int64_t(grid.x) * vr, vc}, grid, "tile_view, " + what);
    }
    {
      int r0 = pick(gen, 0, rows - vr), c0 = pick(gen, 0, cols - vc);
      tl::Kernel k("assign", threads);
      tl::Array xa = k.input("x"), sa = k.input("s"), out = k.output("out");
      tl::Tile dst = tl::tile_load(xa, {rows, cols}, at);
      tl::Tile src = tl::tile_map(tl::Unary::tanh, tl::tile_load(sa, {vr, vc}, at));
      tl::tile_store(out, tl::tile_assign(dst, src, r0, c0) * dst, at);
      check_grad(k, {x, s}, {R, C}, grid,
                 "tile_assign at (" + std::to_string(r0) + ", " + std::to_string(c0) + "), " + what);
    }
    {
      tl::Kernel k("assign_self", threads);
      tl::Array xa = k.input("x"), out = k.output("out");
      tl::Tile t = tl::tile_load(xa, {rows, cols}, at);
      tl::tile_store(out, tl::tile_assign(t, t * t), at);
      check_grad(k, {x}, {R, C}, grid, "tile_assign of a whole tile, " + what);
    }
  }
}

// A whole kernel: a tile split into its left and right halves with tile_view, each transformed
// (the left through tanh, the right through a matrix and plus the left), and rebuilt with the
// halves swapped by two tile_assigns over the loaded tile (whose own values, all overwritten,
// then get no gradient). Forward against element loops written here and the host reference;
// every gradient by gradcheck.
TEST(TileView, WholeKernelSplitsTransformsAndRebuilds) {
  const int rows = 5, h = 3;
  const int64_t n = 13;  // three blocks, the last one partial
  for (int threads : {7, 96}) {
    tl::Kernel k("split_rebuild", threads);
    tl::Array xa = k.input("x"), wa = k.input("w"), y = k.output("y");
    tl::At at{tl::Coord::block(0), 0};
    tl::Tile t = tl::tile_load(xa, {rows, 2 * h}, at);
    tl::Tile left = tl::tile_view(t, {rows, h}, 0, 0), right = tl::tile_view(t, {rows, h}, 0, h);
    tl::Tile a = tl::tile_map(tl::Unary::tanh, left);
    tl::Tile b = tl::tile_matmul(right, tl::tile_load(wa, {h, h})) + left;
    tl::tile_store(y, tl::tile_assign(tl::tile_assign(t, b, 0, 0), a, 0, h), at);
    Tensor x = rand_tensor({n, 2 * h}, 21, -1, 1), w = rand_tensor({h, h}, 22, -1, 1);
    std::string what = "split, transform, rebuild, " + std::to_string(threads) + " threads";
    Ref got = run_against_reference(k, {x, w}, {n, 2 * h}, {3, 1, 1}, what, {1e-5, 1e-5});
    Ref xr = read(x), wr = read(w);
    Ref want{{n, 2 * h}, std::vector<double>(size_t(n * 2 * h))};
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < h; ++c) {
        double acc = xr.v[size_t(r * 2 * h + c)];
        for (int64_t j = 0; j < h; ++j) acc += xr.v[size_t(r * 2 * h + h + j)] * wr.v[size_t(j * h + c)];
        want.v[size_t(r * 2 * h + c)] = acc;
        want.v[size_t(r * 2 * h + h + c)] = std::tanh(xr.v[size_t(r * 2 * h + c)]);
      }
    EXPECT_TRUE(close(got, want, {1e-5, 1e-5}, what + " (element loops)"));
    check_grad(k, {x, w}, {n, 2 * h}, {3, 1, 1}, what);
  }
}

// A view is a copy: it takes workgroup memory of its own beside its source while both are live;
// the generated kernels say which block each primitive reads and writes.
TEST(TileView, GeneratedKernelsAndWorkgroupMemory) {
  tl::Kernel k("blocks", 32);
  tl::Array xa = k.input("x"), y = k.output("y");
  tl::Tile t = tl::tile_load(xa, {4, 8});
  tl::Tile v = tl::tile_view(t, {2, 3}, 1, 5);
  tl::tile_store(y, tl::tile_assign(t, v, 2, 0));
  EXPECT_EQ(k.workgroup_bytes(false), uint64_t((4 * 8 + 2 * 3 + 4 * 8) * 4));  // t, v and the result
  std::string fwd = k.forward_wgsl(), bwd = k.backward_wgsl();
  EXPECT_NE(fwd.find("t1_view (2×3) = tile_view(t0_x[rows 1 +2, cols 5 +3]), a copy"), std::string::npos) << fwd;
  EXPECT_NE(fwd.find("t2_assign (4×8) = tile_assign(t0_x with [rows 2 +2, cols 0 +3] ← t1_view)"), std::string::npos)
      << fwd;
  EXPECT_NE(bwd.find("adjoint of t1_view: a0_x[rows 1 +2, cols 5 +3] += a1_view"), std::string::npos) << bwd;
  EXPECT_NE(bwd.find("adjoint of t2_assign: a0_x += a2_assign outside [rows 2 +2, cols 0 +3]; a1_view += "
                     "a2_assign[rows 2 +2, cols 0 +3]"),
            std::string::npos)
      << bwd;
}

TEST(TileView, BadInputIsRefusedBeforeGpuWork) {
  ctx()->flush();
  uint64_t allocations = ctx()->pool_stats().allocations;
  tl::Kernel k("bad", 32);
  tl::Array xa = k.input("x"), y = k.output("y");
  tl::Tile t = tl::tile_load(xa, {4, 6}), small = tl::tile_load(xa, {2, 3}), wide = tl::tile_load(xa, {2, 7});
  // Views that do not lie inside the tile: past the last row, past the last column, negative.
  expect_error([&] { (void)tl::tile_view(t, {3, 2}, 2, 0); }, ErrorKind::Shape,
               {"'bad'", "tile_view", "3×2", "4×6", "row offset 2", "column offset 0", "rows 2 … 4"});
  expect_error([&] { (void)tl::tile_view(t, {1, 4}, 0, 3); }, ErrorKind::Shape,
               {"tile_view", "1×4", "4×6", "column offset 3", "columns 3 … 6", "columns 0 … 5"});
  expect_error([&] { (void)tl::tile_view(t, {2, 2}, -1, 0); }, ErrorKind::Shape,
               {"tile_view", "2×2", "4×6", "row offset -1"});
  expect_error([&] { (void)tl::tile_view(t, {5, 6}); }, ErrorKind::Shape, {"tile_view", "5×6", "4×6"});
  expect_error([&] { (void)tl::tile_view(t, {0, 2}, 1, 1); }, ErrorKind::Shape, {"tile_view", "0×2", "empty"});
  // Assigns: a source larger than the destination, one that fits but not at that place.
  expect_error([&] { (void)tl::tile_assign(small, t); }, ErrorKind::Shape,
               {"'bad'", "tile_assign", "4×6", "2×3", "row offset 0", "column offset 0"});
  expect_error([&] { (void)tl::tile_assign(t, wide, 0, 0); }, ErrorKind::Shape, {"tile_assign", "2×7", "4×6"});
  expect_error([&] { (void)tl::tile_assign(t, small, 1, 4); }, ErrorKind::Shape,
               {"tile_assign", "2×3", "4×6", "row offset 1", "column offset 4", "columns 4 … 6"});
  expect_error([&] { (void)tl::tile_assign(t, small, 0, -2); }, ErrorKind::Shape, {"tile_assign", "column offset -2"});
  tl::Kernel other("other", 32);
  tl::Tile elsewhere = tl::tile_load(other.input("z"), {2, 3});
  expect_error([&] { (void)tl::tile_assign(t, elsewhere, 0, 0); }, ErrorKind::Value, {"tile_assign", "different"});
  expect_error([&] { (void)tl::tile_view(tl::Tile(), {1, 1}); }, ErrorKind::Value, {"tile_view", "empty"});
  expect_error([&] { (void)tl::tile_assign(t, tl::Tile()); }, ErrorKind::Value, {"tile_assign", "empty"});
  EXPECT_EQ(ctx()->pending_dispatches(), 0u);
  EXPECT_EQ(ctx()->pool_stats().allocations, allocations);
  // The refused calls added nothing: the kernel still builds and runs what it was given after them.
  tl::Tile whole = tl::tile_view(t, {4, 6});  // its own statement: the nodes in this order
  tl::tile_store(y, whole + tl::tile_assign(t, small, 2, 3));
  std::string fwd = k.forward_wgsl();
  EXPECT_NE(fwd.find("t3_view (4×6) = tile_view(t0_x"), std::string::npos) << fwd;
  EXPECT_NE(fwd.find("t4_assign (4×6) = tile_assign(t0_x"), std::string::npos) << fwd;
  Tensor x = rand_tensor({4, 7}, 9);
  Ref got = run_against_reference(k, {x}, {4, 7}, {1, 1, 1}, "after refused calls", {1e-6, 1e-6});
  Ref xr = read(x);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 7; ++c) {
      double want = c == 6             ? 7.0
                    : r >= 2 && c >= 3 ? xr.v[size_t(r * 7 + c)] + xr.v[size_t((r - 2) * 7 + c - 3)]
                                       : 2 * xr.v[size_t(r * 7 + c)];
      EXPECT_NEAR(got.v[size_t(r * 7 + c)], want, 1e-6) << r << "," << c;
    }
}
