// Exact k-nearest neighbours in one pass, without the N×N distance matrix (knn_fused.cpp).
//
// A workgroup owns BM query rows and streams over all N points in tiles of BN. Each tile's
// BM×BN inner products come from the matmul's register tiling (BK dimensions at a time staged in
// workgroup memory, TM×TN outputs per thread, fully unrolled by the host so the accumulators stay
// in registers). The ranking key of point j for query i is |x_j|² − 2·x_i·x_j: the query's own
// |x_i|² is the same for every j and is added once at the end.
//
// Selection never sees most candidates: each row keeps its K best in global memory (its own rows
// of the output, sorted by (key, id)), and its K-th key as a threshold in workgroup memory.
// A candidate that beats the threshold is pushed onto the row's queue of Q slots (workgroup
// memory). A row merges its queue into its list (sort, then one merge pass from the back, O(K+Q))
// once the queue holds MERGE_AT candidates (merges cost O(K + Q) each and stall the workgroup
// at its next barrier: the fuller the queue, the fewer of them), when it overflowed, and at the end. Early tiles overflow (every
// candidate beats an empty list): candidates that found no slot stay pending, are re-checked
// against the new threshold after the merge, and are pushed again, until none are left. After
// the first few tiles a row takes about K/t new candidates in tile t, so pushes are rare and the
// stream runs at the speed of its inner products.
//
// Ties are broken by the smaller id, both in the threshold test and in the lists, so the result
// does not depend on the order in which candidates arrive (tile shape, workgroup order).
//
// Parameters: [N, D, row_begin, row_end, out_row0, tiles, K]: points N×D (dense), this dispatch's
// query rows [row_begin, row_end), the global row of the output's first row, ⌈N/BN⌉, the list
// length (a parameter, not a constant: no register holds a list, and one pipeline serves every k).
@group(0) @binding(0) var<storage, read_write> out_index: array<i32>;  // [rows, K]
@group(0) @binding(1) var<storage, read_write> out_key: array<f32>;    // [rows, K]
@group(0) @binding(2) var<storage, read> x: array<f32>;                // [N, D]
@group(0) @binding(3) var<storage, read> norms: array<f32>;            // [N]: |x_j|²

const BM: u32 = {{BM}}u;
const BN: u32 = {{BN}}u;
const BK: u32 = {{BK}}u;
const TM: u32 = {{TM}}u;
const TN: u32 = {{TN}}u;
const TX: u32 = BN / TN;
const THREADS: u32 = {{THREADS}}u;
const Q: u32 = {{Q}}u;
const MERGE_AT: u32 = {{MERGE_AT}}u;
const SELECTING: bool = {{SELECTING}};  // false only for `bench knn`'s compute-only timing
const MAXF: f32 = 0x1.fffffep+127f;

var<workgroup> a_tile: array<vec4<f32>, BK * BM / 4u>;  // [BK][BM] query chunk
var<workgroup> b_tile: array<vec4<f32>, BK * BN / 4u>;  // [BK][BN] point chunk
var<workgroup> b_norm: array<f32, BN>;
var<workgroup> thr_key: array<f32, BM>;  // each row's K-th (key, id): the bar a candidate must beat
var<workgroup> thr_id: array<i32, BM>;
var<workgroup> queue_len: array<atomic<u32>, BM>;
var<workgroup> queue_key: array<f32, BM * Q>;
var<workgroup> queue_id: array<i32, BM * Q>;
// Set by a push that found its queue full; read uniformly after the merges. Two slots used in
// turn, so the one being cleared is never the one being read or written.
var<workgroup> retry: array<u32, 2>;

fn before(ka: f32, ia: i32, kb: f32, ib: i32) -> bool { return ka < kb || (ka == kb && ia < ib); }

// Query row r (local) against point `id` with key v: worth a queue slot?
fn passes(v: f32, id: i32, r: u32, row: u32) -> bool {
  return u32(id) != row && before(v, id, thr_key[r], thr_id[r]);
}

// Pushes one candidate; false when the row's queue is full (the caller retries after the merge).
fn push(r: u32, v: f32, id: i32, parity: u32) -> bool {
  let slot = atomicAdd(&queue_len[r], 1u);
  if (slot < Q) {
    queue_key[r * Q + slot] = v;
    queue_id[r * Q + slot] = id;
    return true;
  }
  retry[parity] = 1u;
  return false;
}

// Row r's queue into its list (out rows at `base`): insertion-sort the queue, then merge from
// the back, dropping the largest. The list stays sorted; the threshold becomes its K-th entry.
fn merge_row(r: u32, base: u32, force: bool, K: u32) {
  let pushed = atomicLoad(&queue_len[r]);
  if (pushed == 0u || (!force && pushed < MERGE_AT)) { return; }
  let m = min(pushed, Q);
  let q0 = r * Q;
  for (var s = 1u; s < m; s++) {
    let kv = queue_key[q0 + s];
    let iv = queue_id[q0 + s];
    var at = s;
    while (at > 0u && before(kv, iv, queue_key[q0 + at - 1u], queue_id[q0 + at - 1u])) {
      queue_key[q0 + at] = queue_key[q0 + at - 1u];
      queue_id[q0 + at] = queue_id[q0 + at - 1u];
      at--;
    }
    queue_key[q0 + at] = kv;
    queue_id[q0 + at] = iv;
  }
  // K + m entries, keep the K smallest: skip the m largest, then fill positions K−1 … 0 from the
  // larger remaining head. Position p is never below the list's read pointer, so in place is safe.
  var a = i32(K) - 1;
  var b = i32(m) - 1;
  for (var drop = 0u; drop < m; drop++) {
    if (b < 0) { break; }
    if (a >= 0 && before(queue_key[q0 + u32(b)], queue_id[q0 + u32(b)], out_key[base + u32(a)], out_index[base + u32(a)])) {
      a--;
    } else {
      b--;
    }
  }
  for (var p = i32(K) - 1; p >= 0 && b >= 0; p--) {
    if (a >= 0 && before(queue_key[q0 + u32(b)], queue_id[q0 + u32(b)], out_key[base + u32(a)], out_index[base + u32(a)])) {
      out_key[base + u32(p)] = out_key[base + u32(a)];
      out_index[base + u32(p)] = out_index[base + u32(a)];
      a--;
    } else {
      out_key[base + u32(p)] = queue_key[q0 + u32(b)];
      out_index[base + u32(p)] = queue_id[q0 + u32(b)];
      b--;
    }
  }
  thr_key[r] = out_key[base + K - 1u];
  thr_id[r] = out_index[base + K - 1u];
  atomicStore(&queue_len[r], 0u);
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let N = arg(0u); let D = arg(1u);
  let row_end = arg(3u);
  let tiles = arg(5u);
  let K = arg(6u);
  let row0 = arg(2u) + linear_group(wid, nwg) * BM;  // this workgroup's first query row
  let tx = lid % TX;
  let ty = lid / TX;
  // Row thread `lid` (< BM) owns the list of query row row0 + lid.
  let my_row = row0 + lid;
  let owns_row = lid < BM && my_row < row_end;
  let list_base = (my_row - arg(4u)) * K;
  if (lid < BM) {
    thr_key[lid] = MAXF;
    thr_id[lid] = -1;
    atomicStore(&queue_len[lid], 0u);
    if (owns_row) {
      for (var s = 0u; s < K; s++) { out_key[list_base + s] = MAXF; out_index[list_base + s] = -1; }
    }
  }
  if (lid == 0u) { retry[0] = 0u; retry[1] = 0u; }
  var parity = 0u;
{{DECLARE}}
  let chunks = (D + BK - 1u) / BK;
  var lt = 0u;  // the tile and chunk whose values the prefetch registers hold
  var lk = 0u;
  {
{{LOAD}}
  }
  for (var t = 0u; t < tiles; t++) {
    let col0 = t * BN;
{{ZERO}}
    for (var c = 0u; c < chunks; c++) {
      workgroupBarrier();  // the previous chunk's (or tile's) readers are done
{{STORE}}
      workgroupBarrier();
      lk = c + 1u;
      lt = t;
      if (lk == chunks) { lk = 0u; lt = t + 1u; }
      if (lt < tiles) {
{{LOAD}}
      }
{{COMPUTE}}
    }
    // Keys, and which of this thread's TM×TN candidates beat their row's current bar.
{{SELECT}}
    let last = t + 1u == tiles;
    loop {
      if (!SELECTING) { break; }
{{PUSH}}
      workgroupBarrier();
      if (owns_row) { merge_row(lid, list_base, last, K); }
      if (lid == 0u) { retry[parity ^ 1u] = 0u; }
      let again = workgroupUniformLoad(&retry[parity]);
      parity ^= 1u;
      if (again == 0u) { break; }
{{REFILTER}}
    }
  }
  // Keys to squared distances: add the query's own |x_i|² (rounding can take a key a little
  // below −|x_i|² for duplicates: clamp at zero).
  if (!SELECTING && owns_row) { out_key[list_base] = sink; }  // keeps the inner products alive
  if (SELECTING && owns_row) {
    let qn = norms[my_row];
    for (var s = 0u; s < K; s++) { out_key[list_base + s] = max(out_key[list_base + s] + qn, 0.0); }
  }
}
