// The points' scale, made harmless: a map must not depend on the unit the data were stored in.
// t-SNE's and UMAP's bandwidth searches start at 1 and reach about 2^±100 in their bisection
// steps, and squared distances in f32 underflow below ~1e-19 per coordinate and overflow above
// ~1e19, so points ×1e-20 gave an all-zero map and points ×1e20 were refused. Points whose
// spread lies outside a band around 1 are multiplied by an exact power of two, which changes
// every distance by the same factor and so none of the neighbours, bandwidths in units of the
// distances, or the map; points inside the band are not touched (their maps keep their bits).
#pragma once
#include "surfgrad/point_blocks.hpp"

namespace surfgrad {

// The largest |x_ij − x_0j| over all points and coordinates inside which points are used as
// they are: [2^-12, 2^24]. Outside, they are scaled so that it falls in [1, 2).
constexpr double kInputSpreadLow = 0x1p-12, kInputSpreadHigh = 0x1p24;

// Checks the points (refusing NaN or infinity, and all points identical, with an Error of kind
// Value) and rescales their blocks where their spread is outside the band. Returns the power of
// two applied (0: none). One pass over each block (input_stats.wgsl), one readback of three words.
int normalise_input_scale(PointBlocks& x);

}  // namespace surfgrad
