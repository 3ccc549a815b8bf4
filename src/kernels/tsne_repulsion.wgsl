// Exact t-SNE repulsion for small N: for each point i, Σ_j q_ij²·(y_i − y_j) and Σ_j q_ij with
// q_ij = 1 / (1 + |y_i − y_j|²), over all j ≠ i. Positions are staged through workgroup memory
// in tiles of 256. O(N²): used up to tens of thousands of points.
// Parameters: [N]
@group(0) @binding(0) var<storage, read_write> out: array<vec4<f32>>;  // [N] (fx, fy, Σq, 0)
@group(0) @binding(1) var<storage, read> y: array<vec2<f32>>;          // [N]
var<workgroup> tile: array<vec2<f32>, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = arg(0u);
  let i = linear_group(wid, nwg) * 256u + lid;
  let yi = y[min(i, n - 1u)];
  var f = vec2<f32>(0.0);
  var z = 0.0;
  for (var t0 = 0u; t0 < n; t0 += 256u) {
    workgroupBarrier();
    tile[lid] = y[min(t0 + lid, n - 1u)];
    workgroupBarrier();
    let count = min(256u, n - t0);
    for (var j = 0u; j < count; j++) {
      let diff = yi - tile[j];
      let q = 1.0 / (1.0 + dot(diff, diff));
      if (t0 + j != i) {
        f += q * q * diff;
        z += q;
      }
    }
  }
  if (i < n) { out[i] = vec4<f32>(f, z, 0.0); }
}
