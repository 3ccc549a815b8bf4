// Shared by the matmul family. C[b] = A[b]·B[b], A: [M, K], B: [K, N] per batch, each with
// arbitrary row/column strides (transposed operands are read in place); batch axes broadcast
// through per-axis batch strides. C is contiguous [batches, M, N].
// Parameters: [M, N, K, tiles_m, tiles_n, batches, a_rs, a_cs, b_rs, b_cs, a_off, b_off, c_off,
//              batch_rank, batch_shape[8], a_bstride[8], b_bstride[8], extra...]
fn mm_m() -> u32 { return arg(0u); }
fn mm_n() -> u32 { return arg(1u); }
fn mm_k() -> u32 { return arg(2u); }

// Element offsets of batch `batch` in A and B.
fn mm_batch_bases(batch: u32) -> vec2<u32> {
  var a_base = arg(10u);
  var b_base = arg(11u);
  var rem = batch;
  for (var d = i32(arg(13u)) - 1; d >= 0; d--) {
    let extent = arg(14u + u32(d));
    let coord = rem % extent;
    rem = rem / extent;
    a_base += coord * arg(22u + u32(d));
    b_base += coord * arg(30u + u32(d));
  }
  return vec2<u32>(a_base, b_base);
}

// Output tile (row, column) of linear tile index t; with swizzling, tiles are visited in
// groups of G tile rows, column by column, so neighbouring workgroups share A and B panels in
// the cache instead of sweeping whole rows of C.
fn mm_tile(t: u32, tiles_m: u32, tiles_n: u32, group: u32) -> vec2<u32> {
  if (group <= 1u) { return vec2<u32>(t / tiles_n, t % tiles_n); }
  let per_group = group * tiles_n;
  let first_m = (t / per_group) * group;
  let rows = min(tiles_m - first_m, group);
  let within = t % per_group;
  return vec2<u32>(first_m + within % rows, within / rows);
}

// Where workgroup w works: its batch and tile (row-major tile order); valid = false past the
// last batch (the host rounds grids up).
struct MmTile { batch: u32, row: u32, col: u32, valid: bool }
fn mm_locate(w: u32) -> MmTile {
  let per_batch = arg(3u) * arg(4u);
  let t = w % per_batch;
  return MmTile(w / per_batch, t / arg(4u), t % arg(4u), w / per_batch < arg(5u));
}
