// Each point's nearest centre (knn_order.cpp): argmin over c of |c|² − 2·x·c, the smaller index on
// ties, −1 where no key is below +inf (a NaN). One thread a point, its coordinates in registers
// as DV vec4s (D ≤ 4·DV, zeros past D); the centres pass through workgroup memory CT at a time,
// every thread reading the same centre at once. Before, a [rows, C] matrix of keys a chunk
// (a matmul, a broadcast subtraction, an argmin: 4 GB of keys at 1M points and 1,024 centres,
// ~0.15 s on an H200); here nothing but the answer is written.
// Parameters: [N, D, C].
@group(0) @binding(0) var<storage, read_write> nearest: array<i32>;  // [N]
@group(0) @binding(1) var<storage, read> x: array<f32>;              // [N, D]
@group(0) @binding(2) var<storage, read> centres: array<f32>;        // [C, D]
@group(0) @binding(3) var<storage, read> centre_norms: array<f32>;   // [C]: |c|²

const DV: u32 = {{DV}}u;
const T: u32 = 256u;
const CT: u32 = 64u;
const MAXF: f32 = 0x1.fffffep+127f;
var<workgroup> tile: array<vec4<f32>, CT * DV>;
var<workgroup> tile_norm: array<f32, CT>;

fn coordinate(base: u32, d: u32, D: u32) -> f32 { return select(0.0, x[base + min(d, D - 1u)], d < D); }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let N = arg(0u);
  let D = arg(1u);
  let C = arg(2u);
  let i = linear_group(wid, nwg) * T + lid;
  let row = min(i, N - 1u) * D;
  var p: array<vec4<f32>, DV>;
  for (var q = 0u; q < DV; q++) {
    p[q] = vec4<f32>(coordinate(row, 4u * q, D), coordinate(row, 4u * q + 1u, D), coordinate(row, 4u * q + 2u, D),
                     coordinate(row, 4u * q + 3u, D));
  }
  var best = MAXF;
  var best_c = -1;
  for (var c0 = 0u; c0 < C; c0 += CT) {
    workgroupBarrier();
    for (var e = lid; e < CT * DV; e += T) {
      let c = c0 + e / DV;
      let d = 4u * (e % DV);
      let base = min(c, C - 1u) * D;
      var v = vec4<f32>(0.0);
      if (c < C) {
        v = vec4<f32>(select(0.0, centres[base + min(d, D - 1u)], d < D),
                      select(0.0, centres[base + min(d + 1u, D - 1u)], d + 1u < D),
                      select(0.0, centres[base + min(d + 2u, D - 1u)], d + 2u < D),
                      select(0.0, centres[base + min(d + 3u, D - 1u)], d + 3u < D));
      }
      tile[e] = v;
    }
    if (lid < CT) { tile_norm[lid] = select(MAXF, centre_norms[min(c0 + lid, C - 1u)], c0 + lid < C); }
    workgroupBarrier();
    for (var j = 0u; j < CT; j++) {
      var s = 0.0;
      for (var q = 0u; q < DV; q++) { s += dot(p[q], tile[j * DV + q]); }
      let key = tile_norm[j] - 2.0 * s;
      if (key < best && c0 + j < C) {
        best = key;
        best_c = i32(c0 + j);
      }
    }
  }
  if (i < N) { nearest[i] = best_c; }
}
