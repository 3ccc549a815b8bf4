// The kNN graph's incoming edges (src/maps/graph.cpp), built in parts on the host's cores,
// against the one-pass serial counting sort they must reproduce exactly.
#include <gtest/gtest.h>

#include <random>

#include "maps/graph.hpp"
#include "test_util.hpp"

namespace {

using namespace surfgrad;
using sgtest::ctx;

std::vector<int32_t> serial_reference(const std::vector<int32_t>& nb, int64_t n, int64_t k) {
  std::vector<int32_t> list(size_t(n + 1 + n * k), 0);
  std::vector<std::vector<int32_t>> into(static_cast<size_t>(n));
  for (int64_t e = 0; e < n * k; ++e)
    if (nb[size_t(e)] >= 0) into[size_t(nb[size_t(e)])].push_back(int32_t(e));
  int64_t at = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int32_t e : into[size_t(i)]) list[size_t(n + 1 + at++)] = e;
    list[size_t(i + 1)] = int32_t(at);
  }
  return list;
}

TEST(IncomingEdges, PartsGiveTheSerialListsWithHubsAndEmptySlots) {
  // Sizes on both sides of the threshold where the work is split (2^20 edges); hubs (a tenth of
  // the edges point at point 7 or at the last point), empty slots (−1) and points nobody lists.
  for (auto [n, k] : {std::pair<int64_t, int64_t>{50, 3}, {1000, 15}, {70001, 16}, {30011, 48}}) {
    std::mt19937 rng(uint32_t(n * 31 + k));
    std::vector<int32_t> nb(size_t(n * k));
    for (int32_t& v : nb) {
      uint32_t r = rng() % 100;
      v = r < 5 ? 7 : r < 10 ? int32_t(n - 1) : r < 15 ? -1 : int32_t(rng() % uint32_t(n / 2 + 1));
    }
    std::vector<int32_t> want = serial_reference(nb, n, k);
    EXPECT_EQ(incoming_edges(nb, n, k), want) << n << " × " << k << ", the host's parts";
    // Any number of parts, whatever this machine's cores (a part's first cursor comes from the
    // previous part's offsets: with 2 parts that is part 0's, always 0, so it takes 3 to see an
    // ordering mistake); repeated, since the parts run concurrently.
    for (int parts : {1, 2, 3, 7, 16})
      for (int run = 0; run < 3; ++run)
        ASSERT_EQ(incoming_edges(nb, n, k, parts), want) << n << " × " << k << ", " << parts << " parts, run " << run;
  }
}

TEST(IncomingEdges, GpuGivesTheSerialLists) {
  // The GPU's counting sort (graph_gpu.cpp) against the same reference: hubs past one workgroup's
  // 64 threads, empty slots, points nobody lists, N·k off every workgroup multiple; run twice
  // (its fill is atomic, so only the last step's ordering makes the lists repeatable). And a
  // hub past the GPU path's limit, which takes the host's list.
  for (auto [n, k, hub_percent] : std::vector<std::tuple<int64_t, int64_t, uint32_t>>{
           {1, 1, 0}, {50, 3, 10}, {1000, 15, 2}, {7001, 16, 1}, {3001, 48, 1}, {6000, 2, 50}}) {
    std::mt19937 rng(uint32_t(n * 31 + k));
    std::vector<int32_t> nb(size_t(n * k));
    for (int32_t& v : nb) {
      uint32_t r = rng() % 100;
      v = r < hub_percent       ? 7 % int32_t(n)
          : r < 2 * hub_percent ? int32_t(n - 1)
          : r < 15              ? -1
                                : int32_t(rng() % uint32_t(n / 2 + 1));
    }
    std::vector<int32_t> want = serial_reference(nb, n, k);
    want.resize(size_t(n + 1 + want[size_t(n)]));  // the GPU's list stops at its last edge
    Tensor t = Tensor::from_vector(ctx(), nb, {n, k});
    for (int run = 0; run < 2; ++run)
      ASSERT_EQ(incoming_edges_gpu(t).to_vector(), want) << n << " × " << k << ", run " << run;
    // Lists in row blocks (as descent keeps them past one binding) into blocks of whole targets
    // of at most `cap` edges: the same list, each block within its cap.
    for (auto [rows, cap] : std::vector<std::pair<int64_t, int64_t>>{
             {n, 0}, {(n + 2) / 3, 0}, {(n + 1) / 2, n * k / 3 + 1}, {(n + 3) / 4, n * k / 5 + 1}}) {
      int32_t hub = 0;
      for (int64_t i = 0; i < n; ++i) hub = std::max(hub, want[size_t(i + 1)] - want[size_t(i)]);
      if (cap > 0 && cap < hub) continue;  // the largest hub must fit a block
      std::vector<Tensor> blocks;
      for (int64_t r0 = 0; r0 < n; r0 += rows) blocks.push_back(t.slice(0, r0, std::min(n, r0 + rows)).contiguous());
      IncomingEdges in = incoming_edges_gpu(blocks, rows, cap);
      ASSERT_EQ(in.to_vector(), want) << n << " × " << k << ", " << blocks.size() << " list blocks, cap " << cap;
      for (size_t q = 0; q + 1 < in.first_edge.size(); ++q)
        if (cap > 0) {
          ASSERT_LE(in.first_edge[q + 1] - in.first_edge[q], cap);
        }
      if (cap > 0 && want[size_t(n)] > cap) {
        EXPECT_GT(in.edges.size(), 1u) << n << " × " << k;
      }
    }
  }
  EXPECT_THROW(incoming_edges_gpu(Tensor::zeros(ctx(), {4, 2})), Error);  // f32, not i32 ids
  // Blocks that do not match their declared rows are refused, not misread.
  Tensor a = Tensor::zeros(ctx(), {3, 2}, DType::i32), b = Tensor::zeros(ctx(), {3, 2}, DType::i32);
  EXPECT_THROW(incoming_edges_gpu({a, b}, 4), Error);
  // A hub past the cap of a block of edges: named, not split.
  EXPECT_THROW(incoming_edges_gpu({Tensor::zeros(ctx(), {8, 2}, DType::i32)}, 8, 4), Error);
}

// Neighbour descent's reverse lists, sampled on the GPU, against the host's sample and against
// the definition (every sampled point lists i; points with at most r in-edges get all of them, in
// order): hubs with far more than r in-edges (evenly sampled), empty slots, points nobody lists.
TEST(IncomingEdges, GpuReverseSampleIsTheHosts) {
  for (auto [n, k, r] : std::vector<std::tuple<int64_t, int, int>>{
           {2, 1, 1}, {50, 3, 4}, {1000, 15, 16}, {4001, 48, 16}, {3000, 90, 8}, {500, 7, 128}}) {
    std::mt19937 rng(uint32_t(n * 17 + k + r));
    std::vector<int32_t> nb(size_t(n * k));
    for (int32_t& v : nb) {
      uint32_t p = rng() % 100;
      v = p < 3 ? 7 % int32_t(n) : p < 12 ? -1 : int32_t(rng() % uint32_t(n / 3 + 1));
    }
    std::vector<int32_t> host = sample_reverse(nb, n, k, r);
    Tensor t = Tensor::from_vector(ctx(), nb, {n, int64_t(k)});
    std::vector<int32_t> gpu = sample_reverse_gpu(t, r).to_vector<int32_t>();
    ASSERT_EQ(gpu, host) << n << " × " << k << ", r " << r;
    // From lists in three row blocks, into blocks of edges of at most a third of them (plus the hub).
    if (n >= 3) {
      int64_t rows = (n + 2) / 3;
      std::vector<Tensor> blocks;
      for (int64_t r0 = 0; r0 < n; r0 += rows) blocks.push_back(t.slice(0, r0, std::min(n, r0 + rows)).contiguous());
      ASSERT_EQ(sample_reverse_gpu(blocks, rows, r, n * k / 3 + n).to_vector<int32_t>(), host)
          << n << " × " << k << ", r " << r << ", blocks";
    }
    std::vector<int32_t> in = serial_reference(nb, n, k);
    for (int64_t i = 0; i < n; ++i) {
      int64_t deg = in[size_t(i + 1)] - in[size_t(i)];
      for (int t = 0; t < r; ++t) {
        int32_t s = host[size_t(i * r + t)];
        if (t >= deg) {
          ASSERT_EQ(s, -1) << "point " << i << " slot " << t;
          continue;
        }
        ASSERT_GE(s, 0);
        bool lists_i = false;
        for (int q = 0; q < k; ++q) lists_i = lists_i || nb[size_t(s * k + q)] == int32_t(i);
        ASSERT_TRUE(lists_i) << "sampled " << s << " does not list " << i;
        if (deg <= r) {
          ASSERT_EQ(s, in[size_t(n + 1 + in[size_t(i)] + t)] / k);
        }
      }
    }
  }
  EXPECT_THROW(sample_reverse_gpu(Tensor::zeros(ctx(), {4, 2}, DType::i32), 0), Error);
}

}  // namespace
