// t-SNE attraction per point, in a fixed order (deterministic):
// attract_i = Σ_{e = (i→j)} w_e·q_e·(y_i − y_j) + Σ_{e = (s→i)} w_e·q_e·(y_i − y_s),
// q = 1 / (1 + |Δy|²), over the point's K out-edges (its kNN) and its in-edges (the points that
// have it among their kNN, listed by the host once as CSR of edge ids, with the edges' weights
// gathered into the same order once, so that in-edges read consecutive words too).
//
// LANES threads share a point (16 on GPUs, 1 on CPU adapters: tsne.cpp): lane l takes edges
// l, l + LANES, … of each list, so a group of lanes reads consecutive words of the neighbour,
// weight and CSR arrays (one thread per point read them K words apart, and each in-edge's
// weight at random: every load a separate cache line), and the lanes' partial sums are added in
// a fixed tree in workgroup memory. y (8 bytes a point) is what the edges gather at
// random; it stays in L2 up to a few million points.
// Lists past one binding come in row blocks (list_blocks.hpp), and the in-edges in blocks of
// whole targets: one dispatch takes the rows [a, c), which lie in one list block (its first row
// row0) and one block of in-edges (its first position e0).
// The dispatch's slots [a, c) take the points order[a], …, order[c - 1], a permutation of [a, c):
// the identity, or heaviest in-edge lists first (attraction_order.hpp), so that a workgroup's
// points have lists of about one length. A point's sum does not depend on when it is computed.
// Parameters: [a, c, row0, e0]
@group(0) @binding(0) var<storage, read_write> attract: array<vec2<f32>>;  // [N]
@group(0) @binding(1) var<storage, read> y: array<vec2<f32>>;              // [N]
@group(0) @binding(2) var<storage, read> nbr: array<i32>;                  // the list block's [rows, K]
@group(0) @binding(3) var<storage, read> w: array<f32>;                    // the list block's [rows, K]
@group(0) @binding(4) var<storage, read> offsets: array<i32>;  // [N + 1]: in-edges of i at [offsets[i], offsets[i + 1])
@group(0) @binding(5) var<storage, read> incoming: array<i32>; // edge ids at positions e0 …
@group(0) @binding(6) var<storage, read> w_in: array<f32>;     // their weights, the same positions
@group(0) @binding(7) var<storage, read> order: array<u32>;    // [N]: the point each slot takes
const K: u32 = {{K}}u;
const LANES: u32 = {{LANES}}u;
const THREADS: u32 = 256u;  // THREADS / LANES points a workgroup

var<workgroup> partial: array<vec2<f32>, THREADS>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let lane = lid % LANES;
  let slot = arg(0u) + linear_group(wid, nwg) * (THREADS / LANES) + lid / LANES;
  let inside = slot < arg(1u);
  var i = 0u;
  var f = vec2<f32>(0.0);
  if (inside) {
    i = order[slot];
    let yi = y[i];
    let row = (i - arg(2u)) * K;
    for (var s = lane; s < K; s += LANES) {
      let e = row + s;
      let d = yi - y[u32(nbr[e])];
      f += w[e] / (1.0 + dot(d, d)) * d;
    }
    let e0 = arg(3u);
    for (var t = u32(offsets[i]) - e0 + lane; t < u32(offsets[i + 1u]) - e0; t += LANES) {
      let d = yi - y[u32(incoming[t]) / K];
      f += w_in[t] / (1.0 + dot(d, d)) * d;
    }
  }
  partial[lid] = f;
  workgroupBarrier();
  for (var width = LANES / 2u; width > 0u; width /= 2u) {
    if (lane < width) { partial[lid] += partial[lid + width]; }
    workgroupBarrier();
  }
  if (lane == 0u && inside) { attract[i] = partial[lid]; }
}
