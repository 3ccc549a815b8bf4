// Heaviest in-edge lists first (see attraction_order.hpp).
#include "maps/attraction_order.hpp"

#include <algorithm>

namespace surfgrad {

namespace {
AttractionOrder order_mode = AttractionOrder::Auto;
}

std::vector<uint32_t> heavy_first_order(const std::vector<int32_t>& offsets,
                                        const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  std::vector<uint32_t> order;
  auto degree = [&](int64_t i) { return offsets[size_t(i + 1)] - offsets[size_t(i)]; };
  for (auto [a, c] : ranges) {
    // A counting sort by in-degree, from the highest: stable, so ties stay in row order.
    int32_t most = 0;
    for (int64_t i = a; i < c; ++i) most = std::max(most, degree(i));
    std::vector<size_t> start(size_t(most) + 2, 0);
    for (int64_t i = a; i < c; ++i) ++start[size_t(most - degree(i)) + 1];
    for (size_t d = 1; d < start.size(); ++d) start[d] += start[d - 1];
    const size_t base = order.size();
    order.resize(base + size_t(c - a));
    for (int64_t i = a; i < c; ++i) order[base + start[size_t(most - degree(i))]++] = uint32_t(i);
  }
  return order;
}

void set_attraction_order(AttractionOrder mode) { order_mode = mode; }

bool uses_heavy_first_order(bool) {
  // GPUs and CPU adapters alike (the header says why for each).
  return order_mode != AttractionOrder::Never;
}

}  // namespace surfgrad
