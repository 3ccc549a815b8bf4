// Bounds of groups of G consecutive points (knn_prune.hpp): each group's centre (the mean of its
// points), its radius (the largest distance of a point from that centre) and its largest squared
// norm, D + 2 words a group from word `off` of `out`. One workgroup a group.
@group(0) @binding(0) var<storage, read_write> out: array<u32>;  // f32 bits (the counts after them are u32)
@group(0) @binding(1) var<storage, read> x: array<f32>;  // [N, D]

const T: u32 = 64u;
var<workgroup> far_part: array<f32, T>;
var<workgroup> norm_part: array<f32, T>;

// Parameters: [N, D, G, groups, off].
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let N = arg(0u); let D = arg(1u); let G = arg(2u);
  let g = linear_group(wid, nwg);
  if (g >= arg(3u)) { return; }  // uniform: the whole workgroup
  let r0 = g * G;
  let r1 = min(N, r0 + G);
  let base = arg(4u) + g * (D + 2u);
  let inv = 1.0 / f32(r1 - r0);
  for (var d = lid; d < D; d += T) {
    var s = 0.0;
    for (var r = r0; r < r1; r++) { s += x[r * D + d]; }
    out[base + d] = bitcast<u32>(s * inv);
  }
  // The centre as stored (any point serves as a centre: the radius is measured from these values).
  storageBarrier();
  var far = 0.0;
  var big = 0.0;
  for (var r = r0 + lid; r < r1; r += T) {
    var s = 0.0;
    var nn = 0.0;
    for (var d = 0u; d < D; d++) {
      let v = x[r * D + d];
      let e = v - bitcast<f32>(out[base + d]);
      s = fma(e, e, s);
      nn = fma(v, v, nn);
    }
    far = max(far, s);
    big = max(big, nn);
  }
  far_part[lid] = far;
  norm_part[lid] = big;
  workgroupBarrier();
  if (lid == 0u) {
    for (var i = 1u; i < T; i++) {
      far = max(far, far_part[i]);
      big = max(big, norm_part[i]);
    }
    out[base + D] = bitcast<u32>(sqrt(far));
    out[base + D + 1u] = bitcast<u32>(big);
  }
}
