// normalise_input_scale: the points' checks and their rescaling by a power of two (see the header).
#include "maps/input_scale.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "kernels/launch.hpp"
#include "surfgrad/error.hpp"

namespace surfgrad {

namespace {

// f32's largest finite power of two is 2^127: larger factors are applied in steps.
constexpr int kStep = 100;

}  // namespace

int normalise_input_scale(PointBlocks& x) {
  auto ctx = x.blocks[0].context();
  Tensor first = kernels::dense(x.blocks[0].slice(0, 0, 1));
  const int64_t d = x.dims();
  Tensor stats = Tensor::zeros(ctx, {3}, DType::u32);
  auto program = kernels::Program::file(ctx, "input_stats.wgsl");
  constexpr int64_t kThreads = 256, kMostGroups = 4096;  // (a few waves; each thread then strides)
  for (const Tensor& b : x.blocks) {
    Tensor block = kernels::dense(b);
    const int64_t count = block.numel();
    if (count > int64_t(UINT32_MAX) - kThreads * kMostGroups)
      throw Error(ErrorKind::Value, "map: a block of " + block.describe() + " is past the input check's 2^32 values");
    program.launch({stats, block, first}, {count, d},
                   kernels::groups_for(*ctx, uint64_t(std::min(kMostGroups, (count + kThreads - 1) / kThreads)), 1));
  }
  const std::vector<uint32_t> w = stats.to_vector<uint32_t>();  // one readback for all blocks
  auto as_float = [](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return double(f);
  };
  const bool finite = w[0] == 0;
  const double largest = as_float(w[1]);
  double spread = as_float(w[2]);
  if (!finite)
    throw Error(ErrorKind::Value, "map: the points hold NaN or infinity; remove or impute those values before mapping");
  if (spread == 0)
    throw Error(ErrorKind::Value, "map: all " + std::to_string(x.rows()) +
                                      " points are identical (zero variance): there is no structure to map");
  // A difference of two finite values overflowed: the spread is at most twice the largest value.
  if (!std::isfinite(spread)) spread = 2 * largest;
  if (spread >= kInputSpreadLow && spread <= kInputSpreadHigh) return 0;
  // spread·2^shift in [1, 2): exact for every value that stays a normal f32 (all but those far
  // below the spread, whose distances are ruled by the others).
  const int shift = -std::ilogb(spread);
  for (Tensor& b : x.blocks)
    for (int left = shift; left != 0;) {
      int s = std::clamp(left, -kStep, kStep);
      b = (b * std::ldexp(1.0, s)).contiguous();
      left -= s;
    }
  return shift;
}

}  // namespace surfgrad
