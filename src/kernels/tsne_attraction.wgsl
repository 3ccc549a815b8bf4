// t-SNE attraction per point, in one pass and in a fixed order (deterministic):
// attract_i = Σ_{e = (i→j)} w_e·q_e·(y_i − y_j) + Σ_{e = (s→i)} w_e·q_e·(y_i − y_s),
// q = 1 / (1 + |Δy|²), over the point's K out-edges (its kNN) and its in-edges (the points that
// have it among their kNN, listed by the host once as CSR).
// Parameters: [N]
@group(0) @binding(0) var<storage, read_write> attract: array<vec2<f32>>;  // [N]
@group(0) @binding(1) var<storage, read> y: array<vec2<f32>>;              // [N]
@group(0) @binding(2) var<storage, read> nbr: array<i32>;                  // [N, K]
@group(0) @binding(3) var<storage, read> w: array<f32>;                    // [N, K]
@group(0) @binding(4) var<storage, read> incoming: array<i32>;  // CSR: [N + 1 offsets, edge ids]
const K: u32 = {{K}}u;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_group(wid, nwg) * 64u + lid;
  let n = arg(0u);
  if (i >= n) { return; }
  let yi = y[i];
  var f = vec2<f32>(0.0);
  for (var s = 0u; s < K; s++) {
    let e = i * K + s;
    let d = yi - y[u32(nbr[e])];
    f += w[e] / (1.0 + dot(d, d)) * d;
  }
  for (var t = u32(incoming[i]); t < u32(incoming[i + 1u]); t++) {
    let e = incoming[n + 1u + t];
    let d = yi - y[u32(e) / K];
    f += w[u32(e)] / (1.0 + dot(d, d)) * d;
  }
  attract[i] = f;
}
