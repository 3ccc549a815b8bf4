// Neighbour lists past one storage binding (list_blocks.hpp): a context that pretends a binding
// holds 200 KB makes descent keep 2,000 × 64 lists (512 KB) in three row blocks and t-SNE run on
// them block by block. Both must give, bit for bit, what the plain path gives on an ordinary
// context (the kernels are deterministic: Jacobi rounds, ties by index, gathers in a fixed order).
#include "maps/list_blocks.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "surfgrad/map_pipeline.hpp"
#include "surfgrad/maps.hpp"
#include "test_util.hpp"

namespace {

using namespace surfgrad;
using sgtest::clustered;
using sgtest::ctx;
using sgtest::kSmallBinding;
using sgtest::small_binding_ctx;

TEST(ListBlocks, BlockRowsFollowTheBindingLimit) {
  EXPECT_EQ(list_block_rows(*ctx(), 2000, 64), 2000);
  int64_t rows = list_block_rows(*small_binding_ctx(), 2000, 64);
  EXPECT_EQ(rows, 667);  // three equal blocks of at most 200 KB
  EXPECT_LE(uint64_t(rows) * 64 * 4, kSmallBinding);
  // Past kMaxListBlocks blocks: refused by name, with what to change.
  try {
    list_block_rows(*small_binding_ctx(), 20000, 64);
    FAIL() << "20,000 × 64 lists in 200 KB bindings need 26 blocks";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::LimitExceeded);
    EXPECT_NE(std::string(e.what()).find("fewer neighbours"), std::string::npos) << e.what();
  }
  // Auto picks exact kNN only where its lists (one tensor each) fit one binding: 2,000 × 64
  // do not in 200 KB, 2,000 × 15 do; without k only the size counts.
  EXPECT_FALSE(knn_is_exact(*small_binding_ctx(), 2000, 16, KnnMethod::Auto, 64));
  EXPECT_TRUE(knn_is_exact(*small_binding_ctx(), 2000, 16, KnnMethod::Auto, 15));
  EXPECT_TRUE(knn_is_exact(*small_binding_ctx(), 2000, 16, KnnMethod::Auto));
  EXPECT_TRUE(knn_is_exact(*small_binding_ctx(), 2000, 16, KnnMethod::Exact, 64));  // asked for: refused later by name
  std::string wgsl = blocked_reader("old", "i32", 4, 3, 100);
  EXPECT_NE(wgsl.find("@binding(6) var<storage, read> old_2: array<i32>;"), std::string::npos) << wgsl;
  EXPECT_NE(wgsl.find("if (e < 200u) { return old_1[e - 100u]; }"), std::string::npos) << wgsl;
}

TEST(ListBlocks, DescentAndTsneInBlocksMatchThePlainPath) {
  const int64_t n = 2000, d = 16;
  std::vector<float> host = clustered(n, d);
  auto run = [&](const gpu::ContextPtr& c, KnnResult& graph) {
    Tensor x = Tensor::from_vector(c, host, {n, d});
    graph = nearest_neighbours(x, 64, 3, KnnMethod::Descent);
    TsneOptions o;
    o.perplexity = 64.0 / 3 + 0.1;  // k = 64
    o.iterations = 60;
    o.exaggeration_iterations = 30;
    o.repulsion = Repulsion::Exact;
    return tsne(x, o, {}, &graph).to_vector<float>();
  };
  KnnResult plain, blocked;
  // Lists in blocks take the GPUs' attraction kernels on every adapter; CPU adapters' plain lists
  // would otherwise take the fused kernel over the symmetric graph (tsne_symmetric.hpp), whose
  // sums run in another order: compare the blocks against the same kernels.
  ::setenv("SURFGRAD_TSNE_FUSED", "0", 1);
  std::vector<float> want = run(ctx(), plain), got = run(small_binding_ctx(), blocked);
  ::unsetenv("SURFGRAD_TSNE_FUSED");
  ASSERT_FALSE(plain.blocked());
  ASSERT_TRUE(blocked.blocked());
  ASSERT_EQ(blocked.index_blocks.size(), 3u);
  EXPECT_EQ(blocked.block_rows, 667);
  EXPECT_EQ(blocked.rows(), n);
  EXPECT_EQ(blocked.k(), 64);
  std::vector<int32_t> pi(size_t(n * 64)), bi(pi.size());
  std::vector<float> pd(pi.size()), bd(pi.size());
  plain.to_host(pi.data(), pd.data());
  blocked.to_host(bi.data(), bd.data());
  ASSERT_EQ(bi, pi) << "descent's lists in three blocks";
  ASSERT_EQ(bd, pd);
  EXPECT_GT(knn_recall_sampled(Tensor::from_vector(small_binding_ctx(), host, {n, d}), blocked, 1000), 0.95);
  // Rows across a block boundary, as the recall sample takes them.
  KnnResult rows = blocked.rows_between(660, 670);
  EXPECT_EQ(rows.indices.to_vector<int32_t>(), std::vector<int32_t>(pi.begin() + 660 * 64, pi.begin() + 670 * 64));
  ASSERT_EQ(got, want) << "t-SNE on lists in blocks";
  // UMAP needs its lists in one binding: refused by name.
  UmapOptions u;
  u.n_neighbors = 64;
  u.epochs = 2;
  EXPECT_THROW(umap(Tensor::from_vector(small_binding_ctx(), host, {n, d}), u, {}, &blocked), Error);
}

// The most blocks descent binds (kMaxListBlocks = 3, beside five other bindings: eight in all)
// and one more refused by name; a graph given in blocks that do not match their declared rows,
// refused.
TEST(ListBlocks, MostBlocksAndMismatchedBlocks) {
  const int64_t n = 2000, d = 16;
  std::vector<float> host = clustered(n, d);
  static auto tiny = gpu::Context::create({.quiet = true, .max_binding_bytes = 140 << 10});
  EXPECT_THROW(nearest_neighbours(Tensor::from_vector(tiny, host, {n, d}), 64, 3, KnnMethod::Descent), Error)
      << "2,000 × 64 lists in 140 KB bindings need four blocks";
  KnnResult plain = nearest_neighbours(Tensor::from_vector(ctx(), host, {n, d}), 64, 3, KnnMethod::Descent);
  KnnResult three =
      nearest_neighbours(Tensor::from_vector(small_binding_ctx(), host, {n, d}), 64, 3, KnnMethod::Descent);
  ASSERT_EQ(three.index_blocks.size(), size_t(kMaxListBlocks));
  EXPECT_DOUBLE_EQ(knn_recall(three, plain), 1.0);  // blocked lists read on the host for the comparison
  KnnResult bad = three;
  bad.block_rows = 0;
  TsneOptions o;
  o.perplexity = 64.0 / 3 + 0.1;
  o.iterations = 1;
  Tensor x = Tensor::from_vector(small_binding_ctx(), host, {n, d});
  EXPECT_THROW(tsne(x, o, {}, &bad), Error);
  bad.block_rows = three.block_rows - 1;  // the blocks hold more rows than declared
  EXPECT_THROW(tsne(x, o, {}, &bad), Error);
  MapOptions m;
  EXPECT_THROW(map_graph(three, m), Error);  // map_graph takes one tensor each
}

// Descent skips the pairs it looked at in an earlier round (both members old in their lists):
// the lists must be those of looking at every pair, bit for bit — from random lists (k = 90,
// lists of 15 searched in 48) and from a given graph (knn_refine), plain and in blocks.
TEST(ListBlocks, SkippingOldPairsChangesNoList) {
  const int64_t n = 1500, d = 12;
  std::vector<float> host = clustered(n, d);
  // Uniform points too: no clusters, so the lists keep changing through the rounds and old pairs
  // are skipped while new ones still arrive (also across three blocks).
  std::vector<float> uniform(size_t(2000 * d));
  std::mt19937 rng(3);
  for (float& v : uniform) v = std::uniform_real_distribution<float>(-1, 1)(rng);
  struct Restore {
    ~Restore() { set_descent_skips_old_pairs(true); }
  } restore;  // the default again, even if a check throws
  auto lists = [&](const gpu::ContextPtr& c, bool skip, int k, const std::vector<float>& points = {}) {
    set_descent_skips_old_pairs(skip);
    const std::vector<float>& p = points.empty() ? host : points;
    const int64_t n = int64_t(p.size()) / d;
    Tensor x = Tensor::from_vector(c, p, {n, d});
    KnnResult r = nearest_neighbours(x, k, 11, KnnMethod::Descent);
    // Two more rounds from a graph of every point's next ids: a start with no new/old history.
    std::vector<int32_t> start(size_t(n * 8));
    for (int64_t i = 0; i < n; ++i)
      for (int s = 0; s < 8; ++s) start[size_t(i * 8 + s)] = int32_t((i + 1 + s) % n);
    KnnResult refined = knn_refine(x, Tensor::from_vector(c, start, {n, 8}), 3, 4);
    set_descent_skips_old_pairs(true);
    std::vector<int32_t> ids(size_t(n * k));
    std::vector<float> dist(ids.size());
    r.to_host(ids.data(), dist.data());
    std::vector<int32_t> more = refined.indices.to_vector<int32_t>();
    ids.insert(ids.end(), more.begin(), more.end());
    return std::pair{ids, dist};
  };
  for (int k : {90, 15}) {
    auto every = lists(ctx(), false, k), skipping = lists(ctx(), true, k);
    EXPECT_EQ(skipping.first, every.first) << "k = " << k;
    EXPECT_EQ(skipping.second, every.second) << "k = " << k;
  }
  auto blocked = lists(small_binding_ctx(), true, 64, uniform), every = lists(ctx(), false, 64, uniform);
  EXPECT_EQ(blocked.first, every.first) << "uniform points, in blocks";
  EXPECT_EQ(blocked.second, every.second) << "uniform points, in blocks";
}

// UMAP's k = 15 from descent's lists of 48: searched in blocks (2,000 × 48 is 384 KB), cut to 15
// and joined into one tensor again (120 KB fits), equal to the plain path's.
TEST(ListBlocks, ShortListsSearchedInBlocksAreJoined) {
  const int64_t n = 2000, d = 16;
  std::vector<float> host = clustered(n, d);
  KnnResult plain = nearest_neighbours(Tensor::from_vector(ctx(), host, {n, d}), 15, 5, KnnMethod::Descent);
  KnnResult joined =
      nearest_neighbours(Tensor::from_vector(small_binding_ctx(), host, {n, d}), 15, 5, KnnMethod::Descent);
  ASSERT_FALSE(joined.blocked());
  EXPECT_EQ(joined.indices.to_vector<int32_t>(), plain.indices.to_vector<int32_t>());
  EXPECT_EQ(joined.distances.to_vector<float>(), plain.distances.to_vector<float>());
}

}  // namespace
