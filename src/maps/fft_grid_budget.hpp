// A budget for t-SNE's FFT grid. Its nodes per side follow the map's extent over grid_spacing,
// so a tiny spacing makes the grid, and each iteration's FFTs, as large as the adapter allows
// whatever the number of points: `--grid-spacing 0.000001` on 500 points ran 50× longer than
// the default run, with no word. The budget grows with the points, so that no real job (the
// default spacing of 0.5 on maps up to thousands of units wide) is refused.
#pragma once
#include <cstdint>

#include "surfgrad/tsne.hpp"

namespace surfgrad {

// Nodes per side always allowed, and grid nodes allowed per point past that.
constexpr int kFftGridFloorSide = 1024;
constexpr double kFftGridNodesPerPoint = 64;

// Whether t-SNE computes its repulsion by FFT for n points (Auto: past 5,000 points).
bool tsne_uses_fft(Repulsion repulsion, int64_t n);

// The most nodes per side the grid of a map of n points may have: max(1024, √(64·n)).
int fft_grid_side_budget(int64_t n);

// Up front, where t-SNE will use the FFT: refuses (Error of kind Value) a grid_spacing at which
// the budget's grid spans less than one embedding unit, narrower than any t-SNE map grows.
void check_fft_grid_spacing(const TsneOptions& options, int64_t n);

// At run time: the grid (TsneRepulsion::grid_nodes_for, capped at max_nodes) for a map `extent`
// wide; throws Error(LimitExceeded) naming grid_spacing, the iteration and a spacing that fits
// where the grid the extent needs is past the budget.
int fft_grid_nodes_within_budget(double extent, double spacing, int max_nodes, int64_t n, int iteration);

}  // namespace surfgrad
