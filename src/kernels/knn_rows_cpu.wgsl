// Exact k-nearest neighbours for CPU adapters (knn_rows_cpu.cpp): each thread R query rows, no
// workgroup memory and no barriers. lavapipe runs a workgroup's threads 8 at a time in the lanes
// of one SIMD vector, so the streaming kernel's (knn_fused.wgsl) queues, merges and barriers
// cost more there than its register tiles save: at 10k × 100, k = 90, more than half of its time
// went to the selection. Here the lanes walk the points together (a point's index is the same
// in every lane), each point's words are loaded once for a thread's R rows (as vec4s: lavapipe
// loads a lane's value at a time, so four words a load), and each row keeps its K best in a
// max-heap: a candidate that beats the root replaces it and sinks (log₂ K steps), where a sorted
// list would shift ~K/2 entries.
//
// The ranking key of point j for query i is |x_j|² − 2·x_i·x_j (as knn_fused.wgsl); ties are
// broken by the smaller id, so the lists do not depend on the order the points are visited in.
// Parameters: [N, row_begin, row_end, out_row0]: this dispatch's query rows [row_begin,
// row_end), written at row − out_row0 of the output.
@group(0) @binding(0) var<storage, read_write> out_index: array<i32>;  // [rows, K]
@group(0) @binding(1) var<storage, read_write> out_key: array<f32>;    // [rows, K]
@group(0) @binding(2) var<storage, read> x4: array<vec4<f32>>;         // [N, D4]: rows of D4 vec4s
@group(0) @binding(3) var<storage, read> norms: array<f32>;            // [N]: |x_j|²

const K: u32 = {{K}}u;
const D4: u32 = {{D4}}u;
const R: u32 = {{R}}u;
const WG: u32 = 64u;
const MAXF: f32 = 0x1.fffffep+127f;

fn before(ka: f32, ia: i32, kb: f32, ib: i32) -> bool { return ka < kb || (ka == kb && ia < ib); }

// The R heaps, K slots each: row r's in slots r·K … r·K + K − 1.
var<private> heap_key: array<f32, R * K>;
var<private> heap_id: array<i32, R * K>;

// Sinks (key, id) from the root through the first `size` slots of the heap at h (the larger
// child moves up until neither child comes after it).
fn sink(h: u32, size: u32, key: f32, id: i32) {
  var pos = 0u;
  loop {
    let left = 2u * pos + 1u;
    if (left >= size) { break; }
    var c = left;
    if (left + 1u < size && before(heap_key[h + left], heap_id[h + left], heap_key[h + left + 1u], heap_id[h + left + 1u])) {
      c = left + 1u;
    }
    if (!before(key, id, heap_key[h + c], heap_id[h + c])) { break; }
    heap_key[h + pos] = heap_key[h + c];
    heap_id[h + pos] = heap_id[h + c];
    pos = c;
  }
  heap_key[h + pos] = key;
  heap_id[h + pos] = id;
}

// A candidate for row r (the heap at r·K): kept if it beats the row's K-th best.
fn offer(r: u32, row: u32, j: u32, key: f32) {
  let h = r * K;
  if (j != row && before(key, i32(j), heap_key[h], heap_id[h])) { sink(h, K, key, i32(j)); }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let N = arg(0u);
  let first = arg(1u) + linear_group(wid, nwg) * (WG * R) + lid;  // row r: first + r·WG
  // Threads past the rows redo the last row and do not store it (every lane stays in the loop).
  let last_row = arg(2u) - 1u;
{{LOAD_QUERY}}
  for (var s = 0u; s < R * K; s++) {
    heap_key[s] = MAXF;
    heap_id[s] = -1;
  }
  for (var j = 0u; j < N; j++) {
    let b = j * D4;
{{DOT}}
  }
  for (var r = 0u; r < R; r++) {
    let wanted = first + r * WG;
    let row = min(wanted, last_row);
    if (wanted != row) { break; }
    // Heap sort: the largest goes to the end, the heap shrinks by one; ascending (key, id) after.
    let h = r * K;
    for (var end = K - 1u; end > 0u; end--) {
      let k = heap_key[h + end];
      let i = heap_id[h + end];
      heap_key[h + end] = heap_key[h];
      heap_id[h + end] = heap_id[h];
      sink(h, end, k, i);
    }
    // Keys to squared distances: add the query's own |x_i|² (rounding can take a key a little
    // below −|x_i|² for duplicates: clamp at zero).
    let qn = norms[row];
    let base = (row - arg(3u)) * K;
    for (var s = 0u; s < K; s++) {
      out_key[base + s] = max(heap_key[h + s] + qn, 0.0);
      out_index[base + s] = heap_id[h + s];
    }
  }
}
