// The order t-SNE's attraction visits the points in (attraction_order.hpp): each range its own
// rows by in-degree from the highest with ties by row, and a t-SNE map bit-equal with and without
// that order, in one list block and in three.
#include "maps/attraction_order.hpp"

#include <algorithm>
#include <random>

#include "surfgrad/maps.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

TEST(AttractionOrder, RangesByInDegreeFromTheHighest) {
  const int64_t n = 3000;
  std::mt19937 rng(11);
  std::vector<int32_t> offsets(size_t(n + 1), 0);
  for (int64_t i = 0; i < n; ++i) {
    int32_t degree = rng() % 5 == 0 ? int32_t(rng() % 700) : int32_t(rng() % 40);  // hubs, ties, zeros
    offsets[size_t(i + 1)] = offsets[size_t(i)] + degree;
  }
  auto degree = [&](uint32_t i) { return offsets[i + 1] - offsets[i]; };
  std::vector<std::pair<int64_t, int64_t>> ranges = {{0, 1000}, {1000, 1001}, {1001, 2500}, {2500, n}};
  std::vector<uint32_t> order = heavy_first_order(offsets, ranges);
  ASSERT_EQ(order.size(), size_t(n));
  for (auto [a, c] : ranges) {
    std::vector<uint32_t> rows(order.begin() + a, order.begin() + c), sorted = rows;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = a; i < c; ++i) ASSERT_EQ(sorted[size_t(i - a)], uint32_t(i)) << "range [" << a << ", " << c << ")";
    for (size_t t = 1; t < rows.size(); ++t) {
      ASSERT_GE(degree(rows[t - 1]), degree(rows[t])) << "slot " << a + int64_t(t);
      if (degree(rows[t - 1]) == degree(rows[t])) {
        ASSERT_LT(rows[t - 1], rows[t]) << "ties by row";
      }
    }
  }
  EXPECT_NE(order[0], 0u) << "random degrees should not already be sorted";
}

// One list block, and three (a context whose storage bindings hold 200 KiB).
TEST(AttractionOrder, TsneMapIsBitEqualWithAndWithoutIt) {
  const int64_t n = 2000, d = 16;
  std::vector<float> host = clustered(n, d);
  const gpu::ContextPtr& small = small_binding_ctx();
  for (const gpu::ContextPtr& c : {ctx(), small}) {
    Tensor x = Tensor::from_vector(c, host, {n, d});
    KnnResult graph = nearest_neighbours(x, 64, 3, KnnMethod::Descent);
    EXPECT_EQ(graph.blocked(), c == small);
    TsneOptions o;
    o.perplexity = 64.0 / 3 + 0.1;  // k = 64
    o.iterations = 100;
    o.exaggeration_iterations = 50;
    o.repulsion = Repulsion::Exact;
    set_attraction_order(AttractionOrder::Never);
    std::vector<float> plain = tsne(x, o, {}, &graph).to_vector<float>();
    set_attraction_order(AttractionOrder::Always);
    std::vector<float> ordered = tsne(x, o, {}, &graph).to_vector<float>();
    set_attraction_order(AttractionOrder::Auto);
    EXPECT_EQ(ordered, plain);
  }
}
