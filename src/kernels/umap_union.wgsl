// UMAP's fuzzy union of the directed memberships, on the GPU (it was a host hash map: 5.2 s of
// a million-point UMAP on the H100, for 15 million edges). One thread an edge e = (i → j):
// u = w_ij + w_ji − w_ij·w_ji, halved where the pair is present in both directions (each
// directed edge then carries half, so every point's out- and in-edges sum to the pair's weight
// once); w_ji is found by scanning j's K neighbours for i.
// mode 1 rescales in place: u / u_max, and 0 below `cut` (1/epochs: never sampled).
// Parameters: [edges N·K, mode, u_max (f32), cut (f32)]
@group(0) @binding(0) var<storage, read_write> u: array<f32>;  // [N, K]
@group(0) @binding(1) var<storage, read> w: array<f32>;        // [N, K]
@group(0) @binding(2) var<storage, read> idx: array<i32>;      // [N, K]
const K: u32 = {{K}}u;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let e = linear_group(wid, nwg) * 64u + lid;
  if (e >= arg(0u)) { return; }
  if (arg(1u) == 1u) {
    let v = u[e] / arg_f32(2u);
    u[e] = select(v, 0.0, v < arg_f32(3u));
    return;
  }
  let i = i32(e / K);
  let j = idx[e];
  let a = w[e];
  var b = 0.0;
  var both = false;
  if (j >= 0) {
    let row = u32(j) * K;
    for (var s = 0u; s < K; s++) {
      if (idx[row + s] == i) { b = w[row + s]; both = true; break; }
    }
  }
  let v = a + b - a * b;
  u[e] = select(v, v * 0.5, both);
}
