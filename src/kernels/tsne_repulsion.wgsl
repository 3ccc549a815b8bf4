// Exact t-SNE repulsion for small N: for each point i, Σ_j q_ij²·(y_i − y_j) and Σ_j q_ij with
// q_ij = 1 / (1 + |y_i − y_j|²), over all j ≠ i. O(N²): used up to thousands of points.
// Each thread takes R = 8 points (i, i + THREADS, …), so every position read from the tile serves
// R pairs: on a CPU adapter (lavapipe) the loads, not the arithmetic, were the cost (5.5 ms an
// iteration at 1,797 points with one point a thread, 256 threads; 1.7 ms with 8). Positions
// are staged through workgroup memory in tiles of 256. The pair j = i is not skipped with a branch: it adds
// q = 1 and no force (y_i − y_i = 0), and 1 is taken off Σq at the end.
// THREADS (TsneRepulsion::exact_values): 32 on GPUs; 8 on CPU adapters, one SIMD vector of
// lavapipe's, so a workgroup holds 64 points: 1,797 points are 29 workgroups that two cores
// share evenly, where 256-point workgroups were 7 full ones and a sliver (4 against 3), and a
// barrier switches no other fibres. Each point sums its pairs in the same order either way.
// Parameters: [N]
@group(0) @binding(0) var<storage, read_write> out: array<vec4<f32>>;  // [N] (fx, fy, Σq, 0)
@group(0) @binding(1) var<storage, read> y: array<vec2<f32>>;          // [N]
const THREADS: u32 = {{THREADS}}u;
// PAIRED (CPU adapters): one division for two pairs. A CPU divides 8 floats in ~5 cycles, as
// long as the rest of a pair's arithmetic together: lavapipe's kernel took ~20% less time with it.
const PAIRED: bool = {{PAIRED}};
const R: u32 = 8u;
const TILE: u32 = 256u;
var<workgroup> tile: array<vec2<f32>, TILE>;

@compute @workgroup_size({{THREADS}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = arg(0u);
  let base = linear_group(wid, nwg) * THREADS * R + lid;
  var yi: array<vec2<f32>, R>;
  var f: array<vec2<f32>, R>;
  var z: array<f32, R>;
  for (var r = 0u; r < R; r++) {
    yi[r] = y[min(base + r * THREADS, n - 1u)];
    f[r] = vec2<f32>(0.0);
    z[r] = 0.0;
  }
  for (var t0 = 0u; t0 < n; t0 += TILE) {
    workgroupBarrier();
    for (var s = lid; s < TILE; s += THREADS) { tile[s] = y[min(t0 + s, n - 1u)]; }
    workgroupBarrier();
    let count = min(TILE, n - t0);
    for (var j = 0u; j < count; j++) {
      let yj = tile[j];
      if (PAIRED) {
        // q0 = 1/a0 and q1 = 1/a1 from one division, 1/(a0·a1) (a few ulps from two quotients;
        // a0·a1 overflows only for points ~1e19 apart, where q = 0 is the sum's rounding anyway).
        for (var r = 0u; r < R; r += 2u) {
          let d0 = yi[r] - yj;
          let d1 = yi[r + 1u] - yj;
          let a0 = 1.0 + dot(d0, d0);
          let a1 = 1.0 + dot(d1, d1);
          let inv = 1.0 / (a0 * a1);
          let q0 = a1 * inv;
          let q1 = a0 * inv;
          f[r] += q0 * q0 * d0;
          z[r] += q0;
          f[r + 1u] += q1 * q1 * d1;
          z[r + 1u] += q1;
        }
      } else {
        for (var r = 0u; r < R; r++) {
          let diff = yi[r] - yj;
          let q = 1.0 / (1.0 + dot(diff, diff));
          f[r] += q * q * diff;
          z[r] += q;
        }
      }
    }
  }
  for (var r = 0u; r < R; r++) {
    let i = base + r * THREADS;
    if (i < n) { out[i] = vec4<f32>(f[r], z[r] - 1.0, 0.0); }
  }
}
