// Approximate kNN by neighbour descent (Dong, Moses & Li 2011), one pass: each point looks at
// its neighbours' neighbours and keeps the K closest it has seen. Every point reads the previous
// lists and writes a new one (Jacobi style), so the result does not depend on thread order.
// With INIT, the previous lists are replaced by K pseudo-random points from a counter hash.
// Parameters: [N, D, seed]
@group(0) @binding(0) var<storage, read_write> out_index: array<i32>;  // [N, K]
@group(0) @binding(1) var<storage, read_write> out_dist: array<f32>;   // [N, K] squared
@group(0) @binding(2) var<storage, read> x: array<f32>;                // [N, D]
@group(0) @binding(3) var<storage, read> old_index: array<i32>;        // [N, K]
const K: u32 = {{K}}u;
const INIT: bool = {{INIT}};

fn sqdist(i: u32, j: u32, D: u32) -> f32 {
  var s = 0.0;
  for (var c = 0u; c < D; c++) {
    let t = x[i * D + c] - x[j * D + c];
    s += t * t;
  }
  return s;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_group(wid, nwg) * 64u + lid;
  let n = arg(0u);
  if (i >= n) { return; }
  let D = arg(1u);
  var best_d: array<f32, K>;
  var best_i: array<i32, K>;
  for (var s = 0u; s < K; s++) { best_d[s] = 0x1.fffffep+127f; best_i[s] = -1; }
  var count = K;
  if (!INIT) { count = K * (K + 1u); }
  for (var c = 0u; c < count; c++) {
    var j: u32;
    if (INIT) {
      j = hash(hash(i * 0x9E3779B9u + c) ^ arg(2u)) % n;
    } else if (c < K) {
      j = u32(old_index[i * K + c]);                           // the current neighbours
    } else {
      let via = u32(old_index[i * K + (c - K) / K]);
      j = u32(old_index[via * K + (c - K) % K]);               // their neighbours
    }
    if (j == i) { continue; }
    var seen = false;
    for (var s = 0u; s < K; s++) { if (best_i[s] == i32(j)) { seen = true; } }
    if (seen) { continue; }
    let v = sqdist(i, j, D);
    if (!(v < best_d[K - 1u])) { continue; }
    var at = K - 1u;
    while (at > 0u && best_d[at - 1u] > v) {
      best_d[at] = best_d[at - 1u];
      best_i[at] = best_i[at - 1u];
      at--;
    }
    best_d[at] = v;
    best_i[at] = i32(j);
  }
  for (var s = 0u; s < K; s++) {
    out_index[i * K + s] = best_i[s];
    out_dist[i * K + s] = best_d[s];
  }
}
