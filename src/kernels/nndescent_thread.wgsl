// One round of neighbour descent, a thread a point (nndescent_common.wgsl): the thread keeps its
// list in its own memory, scans it for each candidate and inserts the ones that beat the K-th.
// For CPU adapters, whose SIMD lanes run a workgroup's threads in step and for which the
// workgroup kernel's merges cost more than the scans (lavapipe, 5,000 × 50-D, k = 15: 4.8 s
// against 12.3 s); on GPUs nndescent.wgsl, with the same bits, is 3.1–3.5× faster.
// #include "nndescent_common.wgsl"

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let local = linear_group(wid, nwg) * 64u + lid;
  if (local >= arg(4u)) { return; }
  let i = arg(3u) + local;
  let n = arg(0u);
  let D = arg(1u);
  var best_d: array<f32, K>;
  var best_i: array<i32, K>;
  for (var s = 0u; s < K; s++) { best_d[s] = MAXF; best_i[s] = -1; }
  let count = candidates();
  for (var c = 0u; c < count; c++) {
    let jj = candidate(i, c, n);
    if (jj < 0) { continue; }
    let j = u32(jj);
    if (j == i) { continue; }
    var seen = false;
    for (var s = 0u; s < K; s++) { if (best_i[s] == jj) { seen = true; } }
    if (seen) { continue; }
    let v = sqdist(i, j, D, best_d[K - 1u]);
    if (!before(v, jj, best_d[K - 1u], best_i[K - 1u])) { continue; }
    var at = K - 1u;
    while (at > 0u && before(v, jj, best_d[at - 1u], best_i[at - 1u])) {
      best_d[at] = best_d[at - 1u];
      best_i[at] = best_i[at - 1u];
      at--;
    }
    best_d[at] = v;
    best_i[at] = jj;
  }
  for (var s = 0u; s < K; s++) {
    out_index[local * K + s] = best_i[s];
    out_dist[local * K + s] = best_d[s];
  }
  for (var w = 0u; w < W; w++) {
    var bits = 0u;
    for (var s = w * 32u; s < min(K, w * 32u + 32u); s++) {
      if (fresh_in(i, best_i[s])) { bits |= 1u << (s % 32u); }
    }
    flags[arg(6u) + i * W + w] = bits;
  }
}
