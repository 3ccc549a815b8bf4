// Neighbour descent (Dong, Moses & Li 2011), what its two kernels share: one pass, with B(i) =
// the K current neighbours of i and up to R points that have i among theirs (reverse neighbours,
// sampled by reverse_sample.wgsl), each point looks at B(i) and at B(u) for every u in B(i), and
// keeps the K closest it has seen, sorted by (distance, id). Every point reads the previous lists
// and writes a new one (Jacobi style), and ties go to the smaller index, so a list is the K best
// distinct candidates whatever the order they are looked at: nndescent.wgsl (a workgroup a point,
// for GPUs) and nndescent_thread.wgsl (a thread a point, for CPU adapters) give the same bits.
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
// [row0, row0 + rows) of one block, and reads the previous lists of every block.
// Parameters: [N, D, seed, row0, rows, flag words read from, flag words written from]
@group(0) @binding(0) var<storage, read_write> out_index: array<i32>;  // [rows, K]
@group(0) @binding(1) var<storage, read_write> out_dist: array<f32>;   // [rows, K] squared
@group(0) @binding(2) var<storage, read> x: array<f32>;                // [N, D]
@group(0) @binding(3) var<storage, read> reverse: array<i32>;          // [N, R], −1 = none
// [2][N][W]: the previous lists' new-bits in one half, this round's in the other (ping-pong,
// so reads and writes never meet, in one binding).
@group(0) @binding(4) var<storage, read_write> flags: array<u32>;
// The previous lists, from binding 5 on, read through old_index_at (list_blocks.hpp).
{{OLD_INDEX}}
const K: u32 = {{K}}u;
const R: u32 = {{R}}u;
const B: u32 = K + R;
const W: u32 = (K + 31u) / 32u;  // flag words a list
const SKIP_OLD: bool = {{SKIP_OLD}};  // false only in the test that checks the skip changes nothing
const INIT: bool = {{INIT}};
const MAXF: f32 = 0x1.fffffep+127f;  // an empty slot's distance (its id: −1), which no candidate beats

fn before(da: f32, ia: i32, db: f32, ib: i32) -> bool { return da < db || (da == db && ia < ib); }

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

// Candidates a point looks at: K hashed points with INIT, else B(i) and B(u) for each u in B(i).
fn candidates() -> u32 {
  if (INIT) { return K; }
  return B * (B + 1u);
}

// Candidate c of point i, or −1 for none (an empty slot, or a pair looked at in an earlier round).
fn candidate(i: u32, c: u32, n: u32) -> i32 {
  if (INIT) { return i32(hash(hash(i * 0x9E3779B9u + c) ^ arg(2u)) % n); }
  if (c < B) { return member(i, c); }  // B(i) itself
  let a = (c - B) / B;
  let s = (c - B) % B;
  let via = member(i, a);
  if (via < 0) { return -1; }
  if (SKIP_OLD && !is_new(i, a) && !is_new(u32(via), s)) { return -1; }  // an old pair: looked at before
  return member(u32(via), s);                                           // B(u) for u in B(i)
}

// |x_i − x_j|², or, once a partial sum passes `bound`, that partial sum: the sum only grows, so
// the candidate would be refused anyway, and the ones kept get the same full sum as ever. After
// PCA the leading dimensions carry most of a distance, so far candidates stop early (1M × 50-D
// on the H200, a thread a point: 27.4 → 22.0 s at k = 15, 27.3 → 25.2 s at k = 90). The
// workgroup kernel is bound by the bytes of the rows it reads, so the test comes every 4
// dimensions (H100, k = 15 / 90: every 4: 3.25 / 5.25 s; 8: 3.36 / 5.49; 16: 3.60 / 5.97;
// never: 4.27 / 7.45). Testing the bar before the already-listed check instead was slower (a
// thread a point, 25.0 s at k = 15): neighbours' neighbours repeat the list often, and the list
// check is cheaper than a distance.
fn sqdist(i: u32, j: u32, D: u32, bound: f32) -> f32 {
  var s = 0.0;
  for (var c = 0u; c < D; c++) {
    let t = x[i * D + c] - x[j * D + c];
    s += t * t;
    if ((c & 3u) == 3u && s > bound) { return s; }
  }
  return s;
}

// Whether entry `id` of i's new list is new: not in its previous list (all are, after INIT).
fn fresh_in(i: u32, id: i32) -> bool {
  if (INIT) { return true; }
  for (var t = 0u; t < K; t++) { if (member(i, t) == id) { return false; } }
  return true;
}
