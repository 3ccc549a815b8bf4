// The subgroup-matrix exact kNN's inputs (knn_subgroup_matrix.cpp), one thread a padded row j:
// X_j = s·(x_j − mean) in f32 (s a power of two that puts the largest |X| just under 2^15, so
// f16 keeps 11 significant bits and scaling is exact), its f16 rounding X̃_j row-major (xh,
// [NPAD, DP]) and transposed (xt, [DP, NPAD]; zeros past N and D), |X_j|² (the kernel's norms),
// and the norms of X̃_j and of the rounding residual r_j = X_j − X̃_j (exact in f32: X̃_j is
// within a factor 2 of X_j), from which the re-check bounds the f16 products' error. The split
// products (knn_subgroup_matrix.cpp: X̃·X̃ + X̃·r̃ + r̃·X̃) also take r̃_j, r_j rounded to f16 (xr,
// row-major), and |r_j − r̃_j| (exact in f32 likewise).
// A thread handles two consecutive points, so that each 32-bit word of the transposed copy has
// one writer (f16 stores may be read-modify-writes of whole words: two threads writing the halves
// of one word lost values on lavapipe). Parameters: [N, D, NPAD, DP, s (f32 bits)].
@group(0) @binding(0) var<storage, read_write> xh: array<f16>;
@group(0) @binding(1) var<storage, read_write> xt: array<vec2<f16>>;  // pairs of points
@group(0) @binding(2) var<storage, read_write> norms: array<f32>;  // [NPAD]
@group(0) @binding(3) var<storage, read_write> stats: array<f32>;  // [NPAD, 4]: |X̃_j|, |r_j|, |r_j − r̃_j|, 0
@group(0) @binding(4) var<storage, read> x: array<f32>;            // [N, D]
@group(0) @binding(5) var<storage, read> mean: array<f32>;         // [D]
@group(0) @binding(6) var<storage, read_write> xr: array<f16>;     // [NPAD, DP]: r̃

// v rounded to binary16's value (ties to even) with integer operations: lavapipe kept f16 values
// at f32 precision in registers (vec2<f32>(vec2<f16>(v)) == v, and pack2x16float's round trip was
// no better), so the residual came out 0 while the stored f16 copy was rounded, and the error
// bound built on it did not hold. |v| < 2^15 here (the scaling); below 2^-14 f16 is subnormal:
// multiples of 2^-24.
fn to_f16(v: f32) -> f32 {
  if (abs(v) < 0x1p-14f) { return round(v * 0x1p24f) * 0x1p-24f; }
  let b = bitcast<u32>(v);
  return bitcast<f32>((b + 0xfffu + ((b >> 13u) & 1u)) & 0xffffe000u);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let N = arg(0u); let D = arg(1u); let NPAD = arg(2u); let DP = arg(3u); let s = arg_f32(4u);
  let j0 = 2u * (linear_group(wid, nwg) * 64u + lid);
  if (j0 >= NPAD) { return; }
  var n2 = vec2<f32>();
  var h2 = vec2<f32>();
  var r2 = vec2<f32>();
  var q2 = vec2<f32>();
  for (var l = 0u; l < DP; l++) {
    var v = vec2<f32>();
    if (j0 < N && l < D) { v.x = (x[j0 * D + l] - mean[l]) * s; }
    if (j0 + 1u < N && l < D) { v.y = (x[(j0 + 1u) * D + l] - mean[l]) * s; }
    let hv = vec2<f32>(to_f16(v.x), to_f16(v.y));
    let h = vec2<f16>(hv);
    xh[j0 * DP + l] = h.x;
    xh[(j0 + 1u) * DP + l] = h.y;
    xt[(l * NPAD + j0) / 2u] = h;
    let r = v - hv;
    let rv = vec2<f32>(to_f16(r.x), to_f16(r.y));
    xr[j0 * DP + l] = f16(rv.x);
    xr[(j0 + 1u) * DP + l] = f16(rv.y);
    let q = r - rv;
    n2 = fma(v, v, n2);
    h2 = fma(hv, hv, h2);
    r2 = fma(r, r, r2);
    q2 = fma(q, q, q2);
  }
  norms[j0] = n2.x;
  norms[j0 + 1u] = n2.y;
  stats[4u * j0] = sqrt(h2.x);
  stats[4u * j0 + 1u] = sqrt(r2.x);
  stats[4u * j0 + 2u] = sqrt(q2.x);
  stats[4u * j0 + 3u] = 0.0;
  stats[4u * j0 + 4u] = sqrt(h2.y);
  stats[4u * j0 + 5u] = sqrt(r2.y);
  stats[4u * j0 + 6u] = sqrt(q2.y);
  stats[4u * j0 + 7u] = 0.0;
}
