// Exact k-nearest neighbours in one pass, without the N×N distance matrix (knn_fused.cpp).
//
// A workgroup owns BM query rows and streams over the N points (in one dispatch or several,
// below) in tiles of BN. Each tile's BM×BN inner products come from the matmul's register
// tiling (BK dimensions at a time staged in workgroup memory, TM×TN outputs per thread, fully
// unrolled by the host so the accumulators stay in registers). The ranking key of point j for
// query i is |x_j|² − 2·x_i·x_j: the query's own |x_i|² is the same for every j and is added
// once at the end.
//
// Selection never sees most candidates: each row keeps its K best in global memory (its own rows
// of the output, sorted by (key, id)), and its K-th key as a threshold in workgroup memory.
// A candidate that beats the threshold is pushed onto the row's queue of Q slots (workgroup
// memory). A row merges its queue into its list once the queue holds MERGE_AT candidates, when
// it overflowed, and at the end; the whole workgroup merges the rows that are due together
// (merge_rows). Early tiles overflow (every
// candidate beats an empty list): candidates that found no slot stay pending, are re-checked
// against the new threshold after the merge, and are pushed again, until none are left. After
// the first few tiles a row takes about K/t new candidates in tile t, so pushes are rare and the
// stream runs at the speed of its inner products.
//
// Ties are broken by the smaller id, both in the threshold test and in the lists, so the result
// does not depend on the order in which candidates arrive (tile shape, workgroup order).
//
// Parameters: [N, D, row_begin, row_end, out_row0, tile_begin, tile_end, tiles, K, ROT_ROWS]: points
// N×D (dense), this dispatch's query rows [row_begin, row_end), the global row of the output's
// first row, this dispatch's tiles of points [tile_begin, tile_end) of all ⌈N/BN⌉ (in the order
// of the rows' group: below), the list length (a parameter, not a constant: no register holds a
// list, and one pipeline serves every k), the rows of a group that starts at one tile.
//
// A dispatch streams a range of the points for all its rows, and the next dispatch goes on from
// the lists it left (keys, not yet distances; the bars are read back from them): so every
// dispatch has a workgroup for every row block. Split by rows instead, a dispatch of a million
// points held ~1.5 waves of workgroups, each streaming all N points, and waited on the last
// half-empty wave (H100: 1M × 50-D, k = 90, one dispatch 4.45 s against 16 of them 5.16 s).
@group(0) @binding(0) var<storage, read_write> out_index: array<i32>;  // [rows, K]
@group(0) @binding(1) var<storage, read_write> out_key: array<f32>;    // [rows, K]
@group(0) @binding(2) var<storage, read> x: array<{{X_ELEM}}>;                // [N, D]
@group(0) @binding(3) var<storage, read> norms: array<f32>;            // [N]: |x_j|²
// The subgroup-matrix variant's transposed f16 copy of the points (knn_subgroup_matrix.cpp).
{{EXTRA_BINDINGS}}
// Tile skipping on sorted points (knn_prune.hpp), where asked for (the last storage binding): parameters 10-13 (the bounds' D,
// the keys' unit as an f32, the row blocks' bounds' offset, the counts' offset).
{{PRUNE_BINDING}}

const BM: u32 = {{BM}}u;
const BN: u32 = {{BN}}u;
const BK: u32 = {{BK}}u;
const TM: u32 = {{TM}}u;
const TN: u32 = {{TN}}u;
const TX: u32 = BN / TN;
const THREADS: u32 = {{THREADS}}u;
const Q: u32 = {{Q}}u;
const MERGE_AT: u32 = {{MERGE_AT}}u;
const MERGE_EVERY: u32 = {{MERGE_EVERY}}u;
const SCRATCH: u32 = {{SCRATCH}}u;  // slots for copies of lists: SCRATCH / K rows merge at once (K ≤ SCRATCH)
const SELECTING: bool = {{SELECTING}};  // false only for `bench knn`'s compute-only timing
// false only for `bench knn`'s no-push timing: every bar starts at −MAXF, so the selection code
// is compiled and the keys and each row's minimum computed, but the exact tests never run and
// nothing is pushed or merged.
const PUSHING: bool = {{PUSHING}};
const MAXF: f32 = 0x1.fffffep+127f;

// The tiles' rows are padded by 4 words: staging writes down a column (consecutive threads,
// consecutive dimensions), which with a row of BM = 64 words put 8 threads on one bank.
const AS: u32 = BM + 4u;
const BS: u32 = BN + 4u;
var<workgroup> a_tile: array<vec4<u32>, BK * AS / 4u>;  // [BK][BM] query chunk (f32 bits), padded rows
var<workgroup> b_tile: array<vec4<u32>, BK * BS / 4u>;  // [BK][BN] point chunk (f32 bits), padded rows
var<workgroup> b_norm: array<f32, BN>;
var<workgroup> thr_key: array<f32, BM>;  // each row's K-th (key, id): the bar a candidate must beat
var<workgroup> thr_id: array<i32, BM>;
var<workgroup> queue_len: array<atomic<u32>, BM>;
var<workgroup> queue_key: array<f32, BM * Q>;
var<workgroup> queue_id: array<i32, BM * Q>;
// Set by a push that found its queue full; read uniformly after the merges. Two slots used in
// turn, so the one being cleared is never the one being read or written. (Four declared: every
// array a multiple of 16 bytes, which the subgroup-matrix variant's operands need whatever order
// the driver lays workgroup memory in; matmul_sgmat.cpp.)
var<workgroup> retry: array<u32, 4>;
// The rows that merge at this merge point (merge_rows); copies of G of their lists go in
// scratch (SCRATCH_MEMORY).
// Arrays of 4 rather than scalars: NVIDIA's driver lays workgroup variables out in its own order,
// and two 4-byte scalars put the subgroup-matrix variant's point panels 8 bytes off the 16-byte
// alignment its fragment loads need (H100, 2026-11-28: every staged product wrong, exact with
// these arrays). Element 0 is the merges'; with tile skipping (knn_prune.cpp) merge_count[1] and [2]
// hold the rows' bars and merge_total[1] the skip decision.
var<workgroup> merge_count: array<atomic<u32>, 4>;
var<workgroup> merge_total: array<u32, 4>;
var<workgroup> merge_rows_at: array<u32, BM>;
{{SCRATCH_MEMORY}}

fn before(ka: f32, ia: i32, kb: f32, ib: i32) -> bool { return ka < kb || (ka == kb && ia < ib); }

// Query row r (local) against point `id` with key v: worth a queue slot?
fn passes(v: f32, id: i32, r: u32, row: u32) -> bool {
  return u32(id) != row && before(v, id, thr_key[r], thr_id[r]);
}

// Pushes one candidate; false when the row's queue is full (the caller retries after the merge).
// The push that fills the row's MERGE_AT-th slot puts the row on the list of rows due to merge.
fn push(r: u32, v: f32, id: i32, parity: u32) -> bool {
  let slot = atomicAdd(&queue_len[r], 1u);
  if (slot == MERGE_AT - 1u) { merge_rows_at[atomicAdd(&merge_count[0], 1u)] = r; }
  if (slot < Q) {
    queue_key[r * Q + slot] = v;
    queue_id[r * Q + slot] = id;
    return true;
  }
  retry[parity] = 1u;
  return false;
}

// The rows whose queues go into their lists at this merge point, all merged by the whole
// workgroup together, G = SCRATCH / K rows at a time. Their lists are first copied into
// `scratch` (one coalesced read). Then every entry of a row's list and queue finds its place in
// the merged order by ranking: a list entry's place is its index plus the queue entries before
// it; a queue entry's is the queue entries before it plus the list entries before it (binary
// search of the copy: the list is sorted). Entries placed before K are written straight to their
// place in the list. (Keys and ids are distinct pairs, so the places are a permutation.)
// One thread a row walking ~K global-memory entries one after another stalled the whole
// workgroup at its next barrier. The binary search once ran in global memory too, a chain of
// dependent reads; searching the copy instead gained little (H100, 1M × 50-D, k = 90: 5.18 →
// 5.16 s) but takes a pass and a barrier less.
fn merge_rows(lid: u32, row0: u32, out_row0: u32, K: u32, count: u32) {
  let G = SCRATCH / K;
  for (var g0 = 0u; g0 < count; g0 += G) {
    let gn = min(G, count - g0);
    for (var it = lid; it < gn * K; it += THREADS) {
      let base = (row0 + merge_rows_at[g0 + it / K] - out_row0) * K + it % K;
      scratch_put(it, out_key[base], out_index[base]);
    }
    workgroupBarrier();  // the lists' copies
    for (var it = lid; it < gn * (K + Q); it += THREADS) {
      let g = it / (K + Q);
      let e = it % (K + Q);
      let r = merge_rows_at[g0 + g];
      let m = min(atomicLoad(&queue_len[r]), Q);
      let s0 = g * K;
      let q0 = r * Q;
      var kv = MAXF;
      var iv = -1;
      var place = K;
      if (e < K) {
        kv = scratch_key(s0 + e);
        iv = scratch_id(s0 + e);
        place = e;
      } else if (e - K < m) {
        kv = queue_key[q0 + e - K];
        iv = queue_id[q0 + e - K];
        var lo = 0u;
        var hi = K;
        while (lo < hi) {
          let mid = (lo + hi) / 2u;
          if (before(scratch_key(s0 + mid), scratch_id(s0 + mid), kv, iv)) { lo = mid + 1u; } else { hi = mid; }
        }
        place = lo;
      }
      if (place < K) {
        for (var j = 0u; j < m; j++) {
          if (before(queue_key[q0 + j], queue_id[q0 + j], kv, iv)) { place++; }
        }
        if (place < K) {
          let base = (row0 + r - out_row0) * K;
          out_key[base + place] = kv;
          out_index[base + place] = iv;
          if (place == K - 1u) {
            thr_key[r] = kv;
            thr_id[r] = iv;
          }
        }
      }
    }
    workgroupBarrier();  // every read of the copies and of the queues' lengths done
    for (var g = lid; g < gn; g += THREADS) { atomicStore(&queue_len[merge_rows_at[g0 + g]], 0u); }
  }
  // The new lists (written by any thread), before the next merge's copy or the last pass reads them.
  storageBarrier();
  workgroupBarrier();
{{MERGED}}
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32{{MAIN_BUILTINS}}) {
  let N = arg(0u); let D = arg(1u);
  let row_end = arg(3u);
  let tile_begin = arg(5u);
  let tile_end = arg(6u);
  let tiles = arg(7u);
  let K = arg(8u);
  let row0 = arg(2u) + linear_group(wid, nwg) * BM;  // this workgroup's first query row
  // A grid past 65,535 workgroups a dimension overhangs the rows by a few workgroups: they would
  // stream every tile for nothing (uniform: the whole workgroup returns).
  if (row0 >= row_end) { return; }
  let tx = lid % TX;
  let ty = lid / TX;
  // Row thread `lid` (< BM) owns the list of query row row0 + lid.
  let my_row = row0 + lid;
  let owns_row = lid < BM && my_row < row_end;
  let list_base = (my_row - arg(4u)) * K;
  if (lid < BM) {
    var tk = select(-MAXF, MAXF, PUSHING);
    var ti = -1;
    if (owns_row && tile_begin == 0u) {
      for (var s = 0u; s < K; s++) { out_key[list_base + s] = MAXF; out_index[list_base + s] = -1; }
    } else if (owns_row && PUSHING) {  // the list an earlier dispatch left, and its bar
      tk = out_key[list_base + K - 1u];
      ti = out_index[list_base + K - 1u];
{{INIT_BAR}}
    }
    thr_key[lid] = tk;
    thr_id[lid] = ti;
    atomicStore(&queue_len[lid], 0u);
  }
  if (lid == 0u) { retry[0] = 0u; retry[1] = 0u; atomicStore(&merge_count[0], 0u); }
{{PRUNE_INIT}}  storageBarrier();  // the empty lists, before another thread's merge reads them
{{PRUNE_START}}  var parity = 0u;
  // The stream starts at the tile of its group of rows' first point and wraps around (tile t of
  // the sequence is tile (t + rot) % tiles): where nearby points lie nearby in memory
  // (knn_order.hpp sorts them so), a row's first tiles hold its near neighbours, its bar falls to
  // about its final k-th at once, and later tiles push (and merge) far fewer candidates. Groups of
  // ROT_ROWS rows (a parameter; 0: no rotation) rather than each workgroup its own tile: the
  // workgroups resident at once then stream the same few tiles, which stay in L2 (every workgroup
  // at its own tile cost the f32 kernel 0.9 s at 1M points on an H200). The lists do not depend
  // on the order (ties go to the smaller id).
  let rot_rows = arg(9u);
  let rot = select(0u, ((row0 / max(rot_rows, 1u)) * rot_rows / BN) % tiles, rot_rows != 0u);
{{DECLARE}}
  let chunks = {{CHUNKS}};  // 1 where the inner products come whole (subgroup matrices)
  var lt = tile_begin;  // the tile and chunk whose values the prefetch registers hold
  var lk = 0u;
  {
{{LOAD}}
  }
  for (var t = tile_begin; t < tile_end; t++) {
{{PRUNE_TILE}}    let col0 = ((t + rot) % tiles) * BN;
{{ZERO}}
    for (var c = 0u; c < chunks; c++) {
      workgroupBarrier();  // the previous chunk's (or tile's) readers are done
{{STORE}}
      workgroupBarrier();
      lk = c + 1u;
      lt = t;
      if (lk == chunks) { lk = 0u; lt = t + 1u; }
      if (lt < tile_end) {
{{LOAD}}
      }
{{COMPUTE}}
    }
    // Keys, and which of this thread's TM×TN candidates beat their row's current bar.
{{SELECT}}
    let last = t + 1u == tile_end;
    // Merges run every MERGE_EVERY tiles (and whenever a queue overflowed, and at the end): a
    // merging row holds up its whole workgroup, so the fewer tiles with any merge, the better.
    let merge_tile = last || t % MERGE_EVERY == MERGE_EVERY - 1u;
    loop {
      if (!SELECTING) { break; }
{{PUSH}}
      let again = workgroupUniformLoad(&retry[parity]);  // a barrier: every push is in
      if (merge_tile || again != 0u) {
        // The rows due (their queues hold MERGE_AT or overflowed) were listed by their pushes;
        // at the end every row with anything queued is.
        if (last) {
          if (owns_row) {
            let pushed = atomicLoad(&queue_len[lid]);
            if (pushed != 0u && pushed < MERGE_AT) { merge_rows_at[atomicAdd(&merge_count[0], 1u)] = lid; }
          }
          workgroupBarrier();
        }
        if (lid == 0u) { merge_total[0] = atomicExchange(&merge_count[0], 0u); }
        merge_rows(lid, row0, arg(4u), K, workgroupUniformLoad(&merge_total[0]));
      }
      if (lid == 0u) { retry[parity ^ 1u] = 0u; }
      parity ^= 1u;
      if (again == 0u) { break; }
      workgroupBarrier();  // the merges' new thresholds, before the pending candidates are re-checked
{{REFILTER}}
    }
  }
  // After the last tile of all, keys to squared distances: add the query's own |x_i|² (rounding
  // can take a key a little below −|x_i|² for duplicates: clamp at zero).
{{PRUNE_END}}  if (!SELECTING && owns_row) { out_key[list_base] = sink; }  // keeps the inner products alive
  storageBarrier();  // the last merges' lists (written by any thread of the workgroup)
  if (SELECTING && owns_row && tile_end == tiles) {
    let qn = norms[my_row];
    for (var s = 0u; s < K; s++) { out_key[list_base + s] = max(out_key[list_base + s] + qn, 0.0); }
  }
}
