// t-SNE's mutual kNN edges folded once, before the optimisation (tsne.cpp): where j is in i's
// list and i in j's, point i's attraction meets j twice, as its out-edge i→j (weight p_{j|i}/2N)
// and as its in-edge j→i (p_{i|j}/2N), and gathers y_j and computes q_ij for each. The in-edge's
// weight is added into the out-edge's and set to zero, which the attraction kernel skips
// (tsne_attraction.wgsl): one gather and one q for the pair, the same sum of the two weights.
// One thread a target point i of this run [a, c) (its list block's first row row0, its in-edge
// block's first position e0): each in-edge's source is looked up in i's own list. Only i's out
// weights and i's in-edge positions are written, so threads never meet.
// Parameters: [a, c, row0, e0]
@group(0) @binding(0) var<storage, read_write> w: array<f32>;     // the list block's [rows, K] out weights
@group(0) @binding(1) var<storage, read_write> w_in: array<f32>;  // the in-edge block's weights
@group(0) @binding(2) var<storage, read> nbr: array<i32>;         // the list block's [rows, K]
@group(0) @binding(3) var<storage, read> offsets: array<i32>;     // [N + 1]
@group(0) @binding(4) var<storage, read> incoming: array<i32>;    // edge ids (source·K + slot) from e0
const K: u32 = {{K}}u;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = arg(0u) + linear_group(wid, nwg) * 64u + lid;
  if (i >= arg(1u)) { return; }
  let row = (i - arg(2u)) * K;
  let e0 = arg(3u);
  for (var t = u32(offsets[i]) - e0; t < u32(offsets[i + 1u]) - e0; t++) {
    let s = i32(u32(incoming[t]) / K);
    for (var o = 0u; o < K; o++) {
      if (nbr[row + o] == s) {
        w[row + o] += w_in[t];
        w_in[t] = 0.0;
        break;
      }
    }
  }
}
