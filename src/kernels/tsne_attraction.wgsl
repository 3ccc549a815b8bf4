// t-SNE attraction per point, in a fixed order (deterministic):
// attract_i = Σ_{e = (i→j)} w_e·q_e·(y_i − y_j) + Σ_{e = (s→i)} w_e·q_e·(y_i − y_s),
// q = 1 / (1 + |Δy|²), over the point's K out-edges (its kNN) and its in-edges (the points that
// have it among their kNN, listed by the host once as CSR of edge ids, with the edges' weights
// gathered into the same order once, so that in-edges read consecutive words too).
//
// LANES threads share a point: lane l takes edges l, l + LANES, … of each list, so a group of
// lanes reads consecutive words of the neighbour, weight and CSR arrays (one thread per point
// read them K words apart, and each in-edge's weight at random: every load a separate cache
// line), and the lanes' partial sums are
// added in a fixed tree in workgroup memory. y (8 bytes a point) is what the edges gather at
// random; it stays in L2 up to a few million points.
// Parameters: [N]
@group(0) @binding(0) var<storage, read_write> attract: array<vec2<f32>>;  // [N]
@group(0) @binding(1) var<storage, read> y: array<vec2<f32>>;              // [N]
@group(0) @binding(2) var<storage, read> nbr: array<i32>;                  // [N, K]
@group(0) @binding(3) var<storage, read> w: array<f32>;                    // [N, K]
@group(0) @binding(4) var<storage, read> incoming: array<i32>;  // CSR: [N + 1 offsets, edge ids]
@group(0) @binding(5) var<storage, read> w_in: array<f32>;      // [N·K]: the in-edges' weights, CSR order
const K: u32 = {{K}}u;
const LANES: u32 = 16u;
const THREADS: u32 = 256u;  // THREADS / LANES points a workgroup

var<workgroup> partial: array<vec2<f32>, THREADS>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let lane = lid % LANES;
  let i = linear_group(wid, nwg) * (THREADS / LANES) + lid / LANES;
  let n = arg(0u);
  var f = vec2<f32>(0.0);
  if (i < n) {
    let yi = y[i];
    for (var s = lane; s < K; s += LANES) {
      let e = i * K + s;
      let d = yi - y[u32(nbr[e])];
      f += w[e] / (1.0 + dot(d, d)) * d;
    }
    let first = u32(incoming[i]);
    for (var t = first + lane; t < u32(incoming[i + 1u]); t += LANES) {
      let d = yi - y[u32(incoming[n + 1u + t]) / K];
      f += w_in[t] / (1.0 + dot(d, d)) * d;
    }
  }
  partial[lid] = f;
  workgroupBarrier();
  for (var width = LANES / 2u; width > 0u; width /= 2u) {
    if (lane < width) { partial[lid] += partial[lid + width]; }
    workgroupBarrier();
  }
  if (lane == 0u && i < n) { attract[i] = partial[lid]; }
}
