// t-SNE's FFT grid against its budget: a grid_spacing no grid can honour is refused up front, a
// grid that outgrows the budget stops the layout naming the option, and default jobs (the
// default spacing on maps far wider than real ones, up to 10M points) are never refused.
#include "maps/fft_grid_budget.hpp"

#include <string>

#include "maps/tsne_repulsion.hpp"
#include "surfgrad/maps.hpp"
#include "test_util.hpp"

using namespace surfgrad;
using sgtest::ctx;

namespace {

// Runs f and returns the surfgrad::Error's message, or "" if nothing was thrown.
template <typename F>
std::string error_of(F f, ErrorKind want) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(int(e.kind()), int(want)) << e.what();
    return e.message();
  }
  return "";
}

bool names_the_option(const std::string& msg) {
  return msg.find("grid_spacing") != std::string::npos && msg.find("--grid-spacing") != std::string::npos;
}

TsneOptions fft(double spacing) {
  TsneOptions o;
  o.repulsion = Repulsion::Fft;
  o.grid_spacing = spacing;
  o.perplexity = 10;
  o.iterations = 60;
  o.exaggeration_iterations = 20;
  return o;
}

}  // namespace

TEST(FftGridBudget, GrowsWithThePoints) {
  EXPECT_EQ(fft_grid_side_budget(300), kFftGridFloorSide);
  EXPECT_EQ(fft_grid_side_budget(100000), 2529);     // √(64·1e5)
  EXPECT_EQ(fft_grid_side_budget(10000000), 25298);  // √(64·1e7)
  EXPECT_TRUE(tsne_uses_fft(Repulsion::Auto, 5001));
  EXPECT_FALSE(tsne_uses_fft(Repulsion::Auto, 5000));
  EXPECT_FALSE(tsne_uses_fft(Repulsion::Exact, 10000000));
}

TEST(FftGridBudget, DefaultJobsAreNeverRefused) {
  const double spacing = TsneOptions{}.grid_spacing;
  const int max_nodes = TsneRepulsion::max_grid_nodes(*ctx());
  // Maps several times wider than t-SNE draws them (tens of units for thousands of points,
  // hundreds for millions) get the grid they always got.
  for (auto [n, extent] : {std::pair<int64_t, double>{200, 500}, {5001, 500}, {100000, 1200}, {10000000, 12000}}) {
    EXPECT_NO_THROW(check_fft_grid_spacing(fft(spacing), n));
    EXPECT_EQ(fft_grid_nodes_within_budget(extent, spacing, max_nodes, n, 10),
              TsneRepulsion::grid_nodes_for(extent, spacing, max_nodes))
        << n << " points, extent " << extent;
  }
  // A diverging map is left to the finiteness check, which names the iteration and the cure.
  EXPECT_NO_THROW(fft_grid_nodes_within_budget(INFINITY, spacing, max_nodes, 300, 10));
}

TEST(FftGridBudget, ASpacingNoGridCanHonourIsRefusedUpFront) {
  std::string msg = error_of([] { check_fft_grid_spacing(fft(1e-6), 500); }, ErrorKind::Value);
  EXPECT_TRUE(names_the_option(msg)) << msg;
  EXPECT_NE(msg.find("use at least"), std::string::npos) << msg;
  EXPECT_NO_THROW(check_fft_grid_spacing(fft(0.002), 500));
  TsneOptions exact = fft(1e-6);
  exact.repulsion = Repulsion::Exact;  // no grid: any spacing is harmless
  EXPECT_NO_THROW(check_fft_grid_spacing(exact, 500));
  // Through t-SNE and map_points, before any kNN or iteration.
  Tensor x = Tensor::normal(ctx(), {300, 8}, 5);
  EXPECT_TRUE(names_the_option(error_of([&] { tsne(x, fft(1e-6)); }, ErrorKind::Value)));
  MapOptions o;
  o.tsne = fft(1e-6);
  EXPECT_TRUE(names_the_option(error_of([&] { map_points(x, o); }, ErrorKind::Value)));
}

TEST(FftGridBudget, AGridPastTheBudgetStopsTheLayoutNamingTheOption) {
  const int max_nodes = TsneRepulsion::max_grid_nodes(*ctx());
  std::string msg =
      error_of([&] { fft_grid_nodes_within_budget(30, 0.01, max_nodes, 500, 40); }, ErrorKind::LimitExceeded);
  EXPECT_TRUE(names_the_option(msg)) << msg;
  EXPECT_NE(msg.find("iteration 40"), std::string::npos) << msg;
  // A layout starting 5 units wide at spacing 0.002 needs 2,504 nodes a side, past 300 points'
  // 1,024: refused at iteration 0, where it ran on at the adapter's largest grid.
  MapOptions o;
  o.tsne = fft(0.002);
  o.init = Tensor::uniform(ctx(), {300, 2}, 3, -2.5, 2.5);
  msg = error_of([&] { map_points(Tensor::normal(ctx(), {300, 8}, 5), o); }, ErrorKind::LimitExceeded);
  EXPECT_TRUE(names_the_option(msg)) << msg;
  EXPECT_NE(msg.find("iteration 0"), std::string::npos) << msg;
}
