// The FFT grid's budget (see the header).
#include "maps/fft_grid_budget.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "maps/tsne_repulsion.hpp"
#include "surfgrad/error.hpp"

namespace surfgrad {

namespace {

// Nodes past the extent/spacing the grid keeps (grid_nodes_for: (G − 4)·spacing ≥ extent).
constexpr double kMarginNodes = 4;

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

bool tsne_uses_fft(Repulsion repulsion, int64_t n) {
  return repulsion == Repulsion::Fft || (repulsion == Repulsion::Auto && n > 5000);
}

int fft_grid_side_budget(int64_t n) {
  double side = std::sqrt(kFftGridNodesPerPoint * double(std::max<int64_t>(n, 0)));
  return int(std::min(std::max(double(kFftGridFloorSide), std::floor(side)), 1e9));
}

void check_fft_grid_spacing(const TsneOptions& options, int64_t n) {
  if (!tsne_uses_fft(options.repulsion, n)) return;
  const int side = fft_grid_side_budget(n);
  const double widest = (side - kMarginNodes) * options.grid_spacing;
  if (widest < 1)
    throw Error(ErrorKind::Value, "grid_spacing (--grid-spacing) " + number(options.grid_spacing) +
                                      ": the FFT grid for " + std::to_string(n) + " points may have " +
                                      std::to_string(side) + " nodes per side, which at this spacing span " +
                                      number(widest) +
                                      " embedding units, narrower than any t-SNE map grows; use at least " +
                                      number(1 / (side - kMarginNodes)) + " (the default is " +
                                      number(TsneOptions{}.grid_spacing) + "), or --repulsion exact");
}

int fft_grid_nodes_within_budget(double extent, double spacing, int max_nodes, int64_t n, int iteration) {
  // A non-finite extent is a diverging map, which map_points' finiteness check names.
  if (!std::isfinite(extent)) return TsneRepulsion::grid_nodes_for(extent, spacing, max_nodes);
  const int side = fft_grid_side_budget(n);
  const double needed = extent / spacing + kMarginNodes;
  if (needed > side)
    throw Error(
        ErrorKind::LimitExceeded,
        "tsne: by iteration " + std::to_string(iteration) + " the map is growing to " + number(extent) +
            " units across, and its FFT grid at grid_spacing (--grid-spacing) " + number(spacing) + " needs " +
            number(std::ceil(needed)) + " nodes per side, past the " + std::to_string(side) + " this job's " +
            std::to_string(n) +
            " points allow (each iteration's FFTs cost its square); as the map still grows, use a spacing of at "
            "least " +
            number(2 * extent / (side - kMarginNodes)) + " (the default is " + number(TsneOptions{}.grid_spacing) +
            "), --repulsion exact, or, if the map is diverging, a lower "
            "--learning-rate");
  return TsneRepulsion::grid_nodes_for(extent, spacing, max_nodes);
}

}  // namespace surfgrad
