// One round of neighbour descent, a workgroup a point (nndescent_common.wgsl), for GPUs.
//
// The T threads build one point's list together, kept sorted by (distance, id) in workgroup
// memory: each thread takes one of T candidates at a time, checks it against the list (every
// thread reads the same entry at once, a broadcast) and against the K-th distance (the bar), and
// pushes a candidate that beats the bar onto a queue; after each T candidates the whole
// workgroup merges the queue into the list. The list is the K best distinct candidates whatever
// the order they came in, so it is nndescent_thread.wgsl's, bit for bit. That kernel keeps each
// list in its thread's local memory and scans it for every candidate, ~K² candidates in one
// thread's chain: on the H100 (1M × 50-D, 4 rounds at k = 90, 8 rounds of lists of 48 at
// k = 15) 18.5 against 5.3 s at k = 90, 10.1 against 3.3 s at k = 15. This kernel is bound by
// the bytes of the candidates' rows: testing the bar more often helps (nndescent_common.wgsl);
// keeping the ids looked at in a workgroup table (to skip repeats without a distance), or
// several points a workgroup, measured slower.
// #include "nndescent_common.wgsl"
const T: u32 = {{T}}u;  // threads a point

// The list in two halves, read from one and merged into the other in turn; empty slots hold
// (MAXF, −1).
var<workgroup> list_d: array<f32, 2u * K>;
var<workgroup> list_i: array<i32, 2u * K>;
var<workgroup> queue_d: array<f32, T>;
var<workgroup> queue_i: array<i32, T>;
var<workgroup> queue_kept: array<u32, T>;  // 0 where an earlier slot holds the same id
var<workgroup> queued: atomic<u32>;
var<workgroup> queued_total: u32;
var<workgroup> fresh_bits: array<atomic<u32>, W>;

// Merges the queue's n candidates (none in the list, each beating its bar) into the list held
// in half `cur`, writing the K best to the other half. Each entry's place is its rank in the
// union: its own index plus the kept queue entries before it for a list entry; for a queue
// entry, the list entries before it (binary search) plus the kept queue entries before it.
fn merge_queue(lid: u32, cur: u32, n: u32) {
  let src = cur * K;
  let dst = (1u - cur) * K;
  if (lid < n) {  // the same id twice in one batch (two paths to it): the first slot keeps it
    var kept = 1u;
    for (var q = 0u; q < lid; q++) { if (queue_i[q] == queue_i[lid]) { kept = 0u; } }
    queue_kept[lid] = kept;
  }
  workgroupBarrier();
  for (var s = lid; s < K; s += T) {
    let d = list_d[src + s];
    let id = list_i[src + s];
    var rank = s;
    for (var q = 0u; q < n; q++) { rank += queue_kept[q] * u32(before(queue_d[q], queue_i[q], d, id)); }
    if (rank < K) { list_d[dst + rank] = d; list_i[dst + rank] = id; }
  }
  if (lid < n && queue_kept[lid] == 1u) {
    let d = queue_d[lid];
    let id = queue_i[lid];
    var lo = 0u;  // list entries before (d, id): the first index not before it
    var hi = K;
    while (lo < hi) {
      let mid = (lo + hi) / 2u;
      if (before(list_d[src + mid], list_i[src + mid], d, id)) { lo = mid + 1u; } else { hi = mid; }
    }
    var rank = lo;
    for (var q = 0u; q < n; q++) { rank += queue_kept[q] * u32(before(queue_d[q], queue_i[q], d, id)); }
    if (rank < K) { list_d[dst + rank] = d; list_i[dst + rank] = id; }
  }
}

@compute @workgroup_size(T)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let local = linear_group(wid, nwg);  // one point a workgroup: uniform
  if (local >= arg(4u)) { return; }
  let i = arg(3u) + local;
  let n = arg(0u);
  let D = arg(1u);
  for (var s = lid; s < K; s += T) { list_d[s] = MAXF; list_i[s] = -1; }
  if (lid == 0u) { atomicStore(&queued, 0u); }
  if (lid < W) { atomicStore(&fresh_bits[lid], 0u); }
  let count = candidates();
  var cur = 0u;
  workgroupBarrier();
  for (var c0 = 0u; c0 < count; c0 += T) {
    var jj = -1;
    if (c0 + lid < count) { jj = candidate(i, c0 + lid, n); }
    if (jj >= 0 && u32(jj) != i) {
      var seen = false;
      for (var s = 0u; s < K; s++) { if (list_i[cur * K + s] == jj) { seen = true; } }
      let bar_d = list_d[cur * K + K - 1u];
      let bar_i = list_i[cur * K + K - 1u];
      if (!seen) {
        let v = sqdist(i, u32(jj), D, bar_d);
        if (before(v, jj, bar_d, bar_i)) {
          let q = atomicAdd(&queued, 1u);  // at most T pushes a batch: one a thread
          queue_d[q] = v;
          queue_i[q] = jj;
        }
      }
    }
    workgroupBarrier();
    if (lid == 0u) { queued_total = atomicExchange(&queued, 0u); }
    let pushed = workgroupUniformLoad(&queued_total);  // a barrier too
    if (pushed > 0u) {
      merge_queue(lid, cur, pushed);
      cur = 1u - cur;
      workgroupBarrier();  // the new list complete before it is read, the queue free again
    }
  }
  for (var s = lid; s < K; s += T) {
    let id = list_i[cur * K + s];
    out_index[local * K + s] = id;
    out_dist[local * K + s] = list_d[cur * K + s];
    if (fresh_in(i, id)) { atomicOr(&fresh_bits[s / 32u], 1u << (s % 32u)); }
  }
  workgroupBarrier();
  if (lid < W) { flags[arg(6u) + i * W + lid] = atomicLoad(&fresh_bits[lid]); }
}
