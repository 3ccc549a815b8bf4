// Selection of the K smallest of each row segment (one thread per segment: a register
// insertion list, ties kept in the order seen). Used twice by knn_exact: first over segments
// of a [B, N] block of distances (skipping each row's own point), then over the S·K candidates
// those left per row, with their column ids.
// Parameters: [segments, segments per row S, row stride, segment length L, columns N,
//              row0 (global index of row 0), offset, ids given (0/1), out row stride,
//              out offset (optional)]
@group(0) @binding(0) var<storage, read_write> out_index: array<i32>;
@group(0) @binding(1) var<storage, read_write> out_dist: array<f32>;
@group(0) @binding(2) var<storage, read> dist: array<f32>;
@group(0) @binding(3) var<storage, read> ids: array<i32>;  // candidate column ids (second pass)
const K: u32 = {{K}}u;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let seg = linear_group(wid, nwg) * 64u + lid;
  if (seg >= arg(0u)) { return; }
  let S = arg(1u);
  let row = seg / S;
  let part = seg % S;
  let L = arg(3u);
  let first = part * L;
  let last = min(arg(4u), first + L);
  let self_index = i32(arg(5u) + row);
  let base = arg(6u) + row * arg(2u);
  let has_ids = arg(7u) != 0u;
  var best_d: array<f32, K>;
  var best_i: array<i32, K>;
  for (var s = 0u; s < K; s++) { best_d[s] = 0x1.fffffep+127f; best_i[s] = -1; }
  for (var j = first; j < last; j++) {
    let v = dist[base + j];
    var id = i32(j);
    if (has_ids) { id = ids[base + j]; }
    if (id == self_index || id < 0 || !(v < best_d[K - 1u])) { continue; }
    var at = K - 1u;
    while (at > 0u && best_d[at - 1u] > v) {
      best_d[at] = best_d[at - 1u];
      best_i[at] = best_i[at - 1u];
      at--;
    }
    best_d[at] = v;
    best_i[at] = id;
  }
  let out = arg(9u) + row * arg(8u) + part * K;
  for (var s = 0u; s < K; s++) {
    out_index[out + s] = best_i[s];
    out_dist[out + s] = max(best_d[s], 0.0);  // |x|²+|y|²−2x·y can round below zero
  }
}
