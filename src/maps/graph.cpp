// The kNN graph's incoming edges (graph.hpp), on the host's cores.
//
// Each part owns a contiguous range of target points and scans every edge in source order,
// counting, then filling, only the edges into its own targets. So no two parts write the same
// word, each target's edges come out in increasing edge id exactly as one serial counting sort
// gives them, and the memory is the output's alone (no per-thread histograms of N entries). The
// scan is repeated per part, but it is sequential; what one core could not hide is the random
// writes, which the parts share out. At 10M × 48 this took 12.8 s on one core.
#include "maps/graph.hpp"

#include <algorithm>

#include "platform/parallel.hpp"

namespace surfgrad {

std::vector<int32_t> incoming_edges(const std::vector<int32_t>& neighbours, int64_t n, int64_t k, int parts) {
  std::vector<int32_t> list(size_t(n + 1 + n * k), 0);
  const int64_t edges = n * k;
  if (parts <= 0) parts = edges >= (int64_t(1) << 20) ? platform::host_threads() : 1;
  parts = int(std::clamp<int64_t>(parts, 1, std::max<int64_t>(n, 1)));
  auto range = [&](int p) {
    return std::pair(platform::part_begin(n, p, parts), platform::part_begin(n, p + 1, parts));
  };
  // Counts: list[i + 1] = the in-degree of i; then prefix sums inside each part.
  std::vector<int64_t> total(size_t(parts), 0);
  platform::parallel_parts(parts, [&](int p) {
    auto [lo, hi] = range(p);
    for (int64_t e = 0; e < edges; ++e) {
      int64_t v = neighbours[size_t(e)];
      if (v >= lo && v < hi) list[size_t(v + 1)]++;
    }
    for (int64_t i = lo + 1; i < hi; ++i) list[size_t(i + 1)] += list[size_t(i)];
    total[size_t(p)] = hi > lo ? list[size_t(hi)] : 0;
  });
  // Offsets across parts; then, once every part's are in place (a part's first cursor,
  // list[lo], is the previous part's last offset), each part's edges in source order.
  std::vector<int64_t> before(size_t(parts), 0);
  for (int p = 1; p < parts; ++p) before[size_t(p)] = before[size_t(p - 1)] + total[size_t(p - 1)];
  platform::parallel_parts(parts, [&](int p) {
    auto [lo, hi] = range(p);
    for (int64_t i = lo; i < hi; ++i) list[size_t(i + 1)] += int32_t(before[size_t(p)]);
  });
  platform::parallel_parts(parts, [&](int p) {
    auto [lo, hi] = range(p);
    std::vector<int32_t> next(list.begin() + lo, list.begin() + hi);
    for (int64_t e = 0; e < edges; ++e) {
      int64_t v = neighbours[size_t(e)];
      if (v >= lo && v < hi) list[size_t(n + 1 + next[size_t(v - lo)]++)] = int32_t(e);
    }
  });
  return list;
}

// Points with more than r incoming edges are sampled evenly over their (source-ordered) list.
std::vector<int32_t> sample_reverse(const std::vector<int32_t>& idx, int64_t n, int k, int r) {
  std::vector<int32_t> in = incoming_edges(idx, n, k), out(size_t(n * r), -1);
  int parts = n * r >= (int64_t(1) << 20) ? platform::host_threads() : 1;
  platform::parallel_parts(parts, [&](int p) {
    for (int64_t i = platform::part_begin(n, p, parts); i < platform::part_begin(n, p + 1, parts); ++i) {
      int64_t b = in[size_t(i)], deg = in[size_t(i + 1)] - b;
      for (int64_t t = 0; t < std::min<int64_t>(deg, r); ++t)
        out[size_t(i * r + t)] = in[size_t(n + 1 + b + (deg <= r ? t : t * deg / r))] / k;
    }
  });
  return out;
}

}  // namespace surfgrad
