// normalise_input_scale: the points' checks and their rescaling by a power of two (see the header).
#include "maps/input_scale.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "surfgrad/error.hpp"

namespace surfgrad {

namespace {

// f32's largest finite power of two is 2^127: larger factors are applied in steps.
constexpr int kStep = 100;

float scalar(const Tensor& t) { return t.to_vector<float>()[0]; }

}  // namespace

int normalise_input_scale(PointBlocks& x) {
  Tensor first = x.blocks[0].slice(0, 0, 1);
  double spread = 0, largest = 0;
  bool finite = true;
  for (const Tensor& b : x.blocks) {
    {  // at most two temporaries of a block's size at once, as the squared distances took
      Tensor a = b.abs();
      // Finiteness from a sum, which any NaN or infinity makes non-finite (a max on the GPU may
      // drop NaN); scaled by 2^-64 so that no finite points, however large, overflow it.
      finite = finite && std::isfinite(scalar((a * 0x1p-64).sum()));
      largest = std::max<double>(largest, scalar(a.max()));
    }
    // No squares: |x_ij − x_0j| neither underflows for tiny points nor overflows for large ones
    // (only a difference of values past ±1.7e38 can, handled below).
    spread = std::max<double>(spread, scalar(sub(b, first).abs().max()));
  }
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
