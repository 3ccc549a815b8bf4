// The order in which t-SNE's attraction kernel visits the points: heaviest in-edge lists first.
// A workgroup takes 16 points, 16 lanes each, and waits for its longest in-edge list; kNN graphs
// have hubs (at 20,000 built-in points the median point has 42 in-edges and one in a hundred
// more than 600), so with points in their own order a workgroup's longest list is 4.6× its mean.
// Visiting the points by in-degree puts lists of about one length in each workgroup, and the
// heavy ones first, so the last workgroups to finish are short. Measured on an H100: the kernel
// −16% at 1M points, −3.5% at 10M (BENCHMARKS.md). On CPU adapters (lavapipe) a point takes one
// thread and eight threads run in SIMD lanes together: the order puts points of about one
// in-degree side by side there (digits: −7% CPU time for the whole map, tsne.cpp). A point's sum
// does not depend on when it is computed: the map is unchanged bit for bit.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace surfgrad {

// For each range [a, c) of rows, its rows by in-degree (offsets[i + 1] − offsets[i]) from the
// highest, ties by row; the ranges concatenated in their order. offsets: the CSR of in-edges, N + 1.
std::vector<uint32_t> heavy_first_order(const std::vector<int32_t>& offsets,
                                        const std::vector<std::pair<int64_t, int64_t>>& ranges);

// Whether t-SNE visits the points in that order (Auto: yes, on every adapter); Always and Never
// are for tests and measurements.
enum class AttractionOrder { Auto, Always, Never };
void set_attraction_order(AttractionOrder mode);
bool uses_heavy_first_order(bool cpu_adapter);

}  // namespace surfgrad
