// Approximate kNN by neighbour descent (Dong, Moses & Li 2011), one pass: with B(i) = the K
// current neighbours of i and up to R points that have i among theirs (reverse neighbours,
// sampled by the host), each point looks at B(i) and at B(u) for every u in B(i), and keeps
// the K closest it has seen. Every point reads the previous lists and writes a new one (Jacobi
// style), and ties go to the smaller index, so the result does not depend on thread order.
// With INIT, the previous lists are replaced by K pseudo-random points from a counter hash.
//
// Only pairs that are new are looked at (the "new/old" flags of Dong et al.): a neighbour u of
// i that was in i's list the round before, and a neighbour j of u that was in u's list the round
// before, were a pair i looked at then, and i's list then kept j or K points before it, all of
// which i looks at again as B(i) itself. So skipping such pairs changes no list: the result is
// the same bit for bit, with fewer distances as the lists settle. Each list entry carries a bit,
// set where the entry is new this round; reverse neighbours are always looked at.
//
// Lists past one binding come in row blocks (list_blocks.hpp): a dispatch writes the rows
// [row0, row0 + rows) of one block, and reads the previous lists of every block through
// old_index_at, from binding 5 on.
// Parameters: [N, D, seed, row0, rows, flag words read from, flag words written from]
@group(0) @binding(0) var<storage, read_write> out_index: array<i32>;  // [rows, K]
@group(0) @binding(1) var<storage, read_write> out_dist: array<f32>;   // [rows, K] squared
@group(0) @binding(2) var<storage, read> x: array<f32>;                // [N, D]
@group(0) @binding(3) var<storage, read> reverse: array<i32>;          // [N, R], −1 = none
// [2][N][W]: the previous lists' new-bits in one half, this round's in the other (ping-pong,
// so reads and writes never meet, in one binding).
@group(0) @binding(4) var<storage, read_write> flags: array<u32>;
{{OLD_INDEX}}
const K: u32 = {{K}}u;
const R: u32 = {{R}}u;
const B: u32 = K + R;
const W: u32 = (K + 31u) / 32u;  // flag words a list
const SKIP_OLD: bool = {{SKIP_OLD}};  // false only in the test that checks the skip changes nothing

// Whether member s of B(p) is new: reverse neighbours always; list entries by their bit.
fn is_new(p: u32, s: u32) -> bool {
  if (s >= K) { return true; }
  return ((flags[arg(5u) + p * W + s / 32u] >> (s % 32u)) & 1u) != 0u;
}

// Member s of B(p): its neighbours, then its reverse neighbours (−1 where there are fewer).
fn member(p: u32, s: u32) -> i32 {
  if (s < K) { return old_index_at(p * K + s); }
  return reverse[p * R + (s - K)];
}
const INIT: bool = {{INIT}};

// |x_i − x_j|², or, once a partial sum passes `bound`, that partial sum: the sum only grows, so
// the candidate would be refused anyway, and the ones kept get the same full sum as ever. After
// PCA the leading dimensions carry most of a distance, so far candidates stop early (1M × 50-D
// on the H200: 27.4 → 22.0 s at k = 15, 27.3 → 25.2 s at k = 90). Testing the bar before the
// already-listed check instead was slower (25.0 s at k = 15): neighbours' neighbours repeat the
// list often, and the list check is cheaper than a distance.
fn sqdist(i: u32, j: u32, D: u32, bound: f32) -> f32 {
  var s = 0.0;
  for (var c = 0u; c < D; c++) {
    let t = x[i * D + c] - x[j * D + c];
    s += t * t;
    if ((c & 7u) == 7u && s > bound) { return s; }
  }
  return s;
}

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
  for (var s = 0u; s < K; s++) { best_d[s] = 0x1.fffffep+127f; best_i[s] = -1; }
  var count = K;
  if (!INIT) { count = B * (B + 1u); }
  for (var c = 0u; c < count; c++) {
    var jj: i32;
    if (INIT) {
      jj = i32(hash(hash(i * 0x9E3779B9u + c) ^ arg(2u)) % n);
    } else if (c < B) {
      jj = member(i, c);                              // B(i) itself
    } else {
      let a = (c - B) / B;
      let s = (c - B) % B;
      let via = member(i, a);
      if (via < 0) { continue; }
      if (SKIP_OLD && !is_new(i, a) && !is_new(u32(via), s)) { continue; }  // an old pair: looked at before
      jj = member(u32(via), s);                       // B(u) for u in B(i)
    }
    if (jj < 0) { continue; }
    let j = u32(jj);
    if (j == i) { continue; }
    var seen = false;
    for (var s = 0u; s < K; s++) { if (best_i[s] == i32(j)) { seen = true; } }
    if (seen) { continue; }
    let v = sqdist(i, j, D, best_d[K - 1u]);
    if (!(v < best_d[K - 1u] || (v == best_d[K - 1u] && jj < best_i[K - 1u]))) { continue; }
    var at = K - 1u;
    while (at > 0u && (best_d[at - 1u] > v || (best_d[at - 1u] == v && best_i[at - 1u] > jj))) {
      best_d[at] = best_d[at - 1u];
      best_i[at] = best_i[at - 1u];
      at--;
    }
    best_d[at] = v;
    best_i[at] = i32(j);
  }
  for (var s = 0u; s < K; s++) {
    out_index[local * K + s] = best_i[s];
    out_dist[local * K + s] = best_d[s];
  }
  // The new-bits of this list: entries that were not in the previous one (all, after INIT).
  for (var w = 0u; w < W; w++) {
    var bits = 0u;
    for (var s = w * 32u; s < min(K, w * 32u + 32u); s++) {
      var fresh = true;
      if (!INIT) {
        for (var t = 0u; t < K; t++) { if (member(i, t) == best_i[s]) { fresh = false; } }
      }
      if (fresh) { bits |= 1u << (s % 32u); }
    }
    flags[arg(6u) + i * W + w] = bits;
  }
}
