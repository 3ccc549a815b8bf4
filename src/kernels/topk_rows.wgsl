// Per-row selection of the K smallest values of a [B, N] block of distances (one thread per
// row: a register insertion list, ties kept in index order), skipping the row's own point.
// Parameters: [B, N, row0 (global index of row 0; self = row0 + row), offset]
@group(0) @binding(0) var<storage, read_write> out_index: array<i32>;
@group(0) @binding(1) var<storage, read_write> out_dist: array<f32>;
@group(0) @binding(2) var<storage, read> dist: array<f32>;
const K: u32 = {{K}}u;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = linear_group(wid, nwg) * 64u + lid;
  let B = arg(0u);
  if (row >= B) { return; }
  let N = arg(1u);
  let self_index = arg(2u) + row;
  let base = arg(3u) + row * N;
  var best_d: array<f32, K>;
  var best_i: array<i32, K>;
  for (var s = 0u; s < K; s++) { best_d[s] = 0x1.fffffep+127f; best_i[s] = -1; }
  for (var j = 0u; j < N; j++) {
    let v = dist[base + j];
    if (j == self_index || !(v < best_d[K - 1u])) { continue; }
    var at = K - 1u;
    while (at > 0u && best_d[at - 1u] > v) {
      best_d[at] = best_d[at - 1u];
      best_i[at] = best_i[at - 1u];
      at--;
    }
    best_d[at] = v;
    best_i[at] = i32(j);
  }
  let out = (arg(2u) + row) * K;
  for (var s = 0u; s < K; s++) {
    out_index[out + s] = best_i[s];
    out_dist[out + s] = max(best_d[s], 0.0);  // |x|²+|y|²−2x·y can round below zero
  }
}
