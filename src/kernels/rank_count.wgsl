// Ranks for trustworthiness: for each (row, target) pair, how many entries of the row's
// distances are strictly smaller than the distance to the target. The row's own point (distance
// 0) is among them, so the count is the target's 1-based rank among the other points.
// One thread a pair.
// Parameters: [B, N, K, row0, offset]
@group(0) @binding(0) var<storage, read_write> count: array<u32>;   // [S, K]; block rows at row0
@group(0) @binding(1) var<storage, read> dist: array<f32>;          // [B, N] (at offset)
@group(0) @binding(2) var<storage, read> target_ids: array<i32>;    // [S, K]; row b is row0 + b

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let pair = linear_group(wid, nwg) * 64u + lid;
  let K = arg(2u);
  if (pair >= arg(0u) * K) { return; }
  let b = pair / K;
  let N = arg(1u);
  let base = arg(4u) + b * N;
  let t = u32(target_ids[(arg(3u) + b) * K + pair % K]);
  let dt = dist[base + t];
  var c = 0u;
  for (var j = 0u; j < N; j++) {
    if (dist[base + j] < dt) { c++; }
  }
  count[arg(3u) * K + pair] = c;
}
