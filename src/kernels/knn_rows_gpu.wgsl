// Exact k-nearest neighbours for small sets on GPUs (knn_rows_gpu.cpp): short code, so that a
// cold driver compiles it in the time of the map's simple kernels, where the streaming kernel
// (knn_fused.wgsl: register tiles, queues, merges) takes 240-400 ms of NVIDIA's compiler for a
// kNN that then runs in 14 ms (docs/cold_start.md).
//
// A workgroup owns R query rows; its WG threads walk the points in tiles of WG, thread t taking
// point tile + t, and compute its R keys |x_j|² − 2·x_i·x_j (the query's |x_i|² is added at the
// end; the query rows are read by every thread at the same address: one load a warp). Selection
// by a shared bar: each row has CAP slots of (key, id) in workgroup memory holding its best K so
// far (sorted) and the candidates appended since; a candidate that comes before the row's bar
// (its K-th best) is appended. When a row might not have room for another tile (more than
// CAP − WG slots taken), every row's slots are sorted (bitonic) and cut back to K, the bar
// becoming the K-th. Ties by the smaller id (as knn_fused.wgsl and knn_rows_cpu.wgsl): the order
// is total, so the lists do not depend on the order points are visited or appended in.
//
// Parameters: [N, DV, row_begin, row_end, out_row0, K]: N points of DV elements (vec4s, or f32
// where D is not a multiple of 4), this dispatch's query rows [row_begin, row_end) written at
// row − out_row0 of the output, K neighbours (≤ CAP − WG; a parameter: one pipeline serves every
// k and D, so it can be built before the points are read).
@group(0) @binding(0) var<storage, read_write> out_index: array<i32>;  // [rows, K]
@group(0) @binding(1) var<storage, read_write> out_key: array<f32>;    // [rows, K]
@group(0) @binding(2) var<storage, read> x: array<{{ELEM}}>;            // [N, DV]
@group(0) @binding(3) var<storage, read> norms: array<f32>;            // [N]: |x_j|²

const R: u32 = {{R}}u;
const WG: u32 = {{WG}}u;
const CAP: u32 = {{CAP}}u;
const MAXF: f32 = 0x1.fffffep+127f;

var<workgroup> slot_key: array<f32, R * CAP>;  // row r's slots: r·CAP … r·CAP + CAP − 1
var<workgroup> slot_id: array<i32, R * CAP>;
var<workgroup> taken: array<atomic<u32>, R>;  // slots in use a row
var<workgroup> held: array<u32, R>;           // the same, read by the sort
var<workgroup> bar_key: array<f32, R>;        // the row's K-th (key, id) once it has K
var<workgroup> bar_id: array<i32, R>;
var<workgroup> most: u32;                     // the most slots any row has taken

fn dotv(a: {{ELEM}}, b: {{ELEM}}) -> f32 { return {{DOTV}}; }

fn before(ka: f32, ia: i32, kb: f32, ib: i32) -> bool { return ka < kb || (ka == kb && ia < ib); }

// Point j's key for row r (global row `row`): appended if it comes before the row's bar.
fn offer(r: u32, row: u32, j: u32, key: f32) {
  if (j != row && before(key, i32(j), bar_key[r], bar_id[r])) {
    let s = r * CAP + atomicAdd(&taken[r], 1u);
    slot_key[s] = key;
    slot_id[s] = i32(j);
  }
}

// Sorts each row's first held[r] slots by (key, id): a bitonic network over `size` (a power of
// two ≥ every held[r]) in which each merge's first step compares mirrored pairs, so that every
// comparator puts the smaller at the lower slot. Slots at or past held[r] act as +∞ and are never
// touched (a comparator with its upper end there would leave both in place). `size` is uniform.
fn sort_rows(lid: u32, width: u32) {
  let half = width / 2u;
  for (var k = 2u; k <= width; k <<= 1u) {
    for (var j = k / 2u; j > 0u; j >>= 1u) {
      for (var t = lid; t < R * half; t += WG) {
        let r = t / half;
        let i = t % half;
        let lo = (i / j) * 2u * j + i % j;
        let hi = select(lo + j, lo ^ (k - 1u), j == k / 2u);
        if (hi < held[r]) {
          let a = r * CAP + lo;
          let b = r * CAP + hi;
          let ka = slot_key[a];
          let ia = slot_id[a];
          let kb = slot_key[b];
          let ib = slot_id[b];
          if (before(kb, ib, ka, ia)) {
            slot_key[a] = kb;
            slot_id[a] = ib;
            slot_key[b] = ka;
            slot_id[b] = ia;
          }
        }
      }
      workgroupBarrier();
    }
  }
}

// Every row's slots sorted and cut back to its K best; the bar is the K-th. held[] and `taken`
// (the uniform maximum of held[]) are set, and a barrier passed, by the caller.
fn compact(lid: u32, taken_most: u32, K: u32) {
  var width = 2u;
  while (width < taken_most) { width <<= 1u; }
  sort_rows(lid, width);
  if (lid < R) {
    let kept = min(held[lid], K);
    atomicStore(&taken[lid], kept);
    if (kept == K) {
      bar_key[lid] = slot_key[lid * CAP + K - 1u];
      bar_id[lid] = slot_id[lid * CAP + K - 1u];
    }
  }
  workgroupBarrier();
}

// Publishes every row's slots taken (held[], and their maximum, returned uniform: a barrier).
fn count_taken(lid: u32) -> u32 {
  workgroupBarrier();  // every append of the tile is in
  if (lid < R) { held[lid] = atomicLoad(&taken[lid]); }
  if (lid == 0u) {
    var m = 0u;
    for (var r = 0u; r < R; r++) { m = max(m, atomicLoad(&taken[r])); }
    most = m;
  }
  return workgroupUniformLoad(&most);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let N = arg(0u);
  let DV = arg(1u);
  let K = arg(5u);
  let first = arg(2u) + linear_group(wid, nwg) * R;  // row r: first + r
  let last = arg(3u) - 1u;  // rows past the range redo the last one and are not written
  if (lid < R) {
    atomicStore(&taken[lid], 0u);
    bar_key[lid] = MAXF;
    bar_id[lid] = 0x7fffffff;
  }
{{ROWS}}
  workgroupBarrier();
  for (var tile = 0u; tile < N; tile += WG) {
    let j = tile + lid;
    if (j < N) {
      let pj = j * DV;
{{DOT}}
      let nj = norms[j];
{{OFFER}}
    }
    let m = count_taken(lid);
    if (m > CAP - WG) { compact(lid, m, K); }
  }
  compact(lid, count_taken(lid), K);
  // The K best a row, in order; keys to squared distances (rounding can take a key a little
  // below −|x_i|² for duplicates: clamped at zero).
  for (var e = lid; e < R * K; e += WG) {
    let r = e / K;
    let row = first + r;
    if (row <= last) {
      let at = (row - arg(4u)) * K + e % K;
      out_key[at] = max(slot_key[r * CAP + e % K] + norms[row], 0.0);
      out_index[at] = slot_id[r * CAP + e % K];
    }
  }
}
