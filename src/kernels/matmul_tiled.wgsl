// Batched C = A·B with 16×16 workgroup-memory tiles, one output per thread.
// A is [M, K], B is [K, N] per batch, each with arbitrary row and column strides, so
// transposed operands are read in place. Batch axes broadcast through per-axis batch strides
// (0 on a broadcast axis). Workgroups enumerate (batch, tile row, tile column) linearly.
// Accumulates in f32 (also for f16 inputs).
// Parameters: [M, N, K, tiles_m, tiles_n, batches, a_rs, a_cs, b_rs, b_cs, a_off, b_off,
//              c_off, batch_rank, batch_shape[8], a_bstride[8], b_bstride[8]]
@group(0) @binding(0) var<storage, read_write> c: array<{{T}}>;
@group(0) @binding(1) var<storage, read> a: array<{{T}}>;
@group(0) @binding(2) var<storage, read> b: array<{{T}}>;
const TILE: u32 = 16u;
var<workgroup> a_tile: array<array<f32, 16>, 16>;
var<workgroup> b_tile: array<array<f32, 16>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let M = arg(0u); let N = arg(1u); let K = arg(2u);
  let tiles_m = arg(3u); let tiles_n = arg(4u);
  let w = linear_group(wid, nwg);
  let batch = w / (tiles_m * tiles_n);
  let t = w % (tiles_m * tiles_n);
  let valid = batch < arg(5u);
  let row = (t / tiles_n) * TILE + lid.y;
  let col = (t % tiles_n) * TILE + lid.x;
  // Offsets of this batch: decompose the batch index over the broadcast batch shape.
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
  let a_rs = arg(6u); let a_cs = arg(7u); let b_rs = arg(8u); let b_cs = arg(9u);
  var acc = 0.0;
  for (var k0 = 0u; k0 < K; k0 += TILE) {
    let ka = k0 + lid.x;
    let kb = k0 + lid.y;
    var av = 0.0;
    var bv = 0.0;
    if (valid && row < M && ka < K) { av = f32(a[a_base + row * a_rs + ka * a_cs]); }
    if (valid && col < N && kb < K) { bv = f32(b[b_base + kb * b_rs + col * b_cs]); }
    a_tile[lid.y][lid.x] = av;
    b_tile[lid.y][lid.x] = bv;
    workgroupBarrier();
    for (var kk = 0u; kk < TILE; kk++) { acc += a_tile[lid.y][kk] * b_tile[kk][lid.x]; }
    workgroupBarrier();
  }
  if (valid && row < M && col < N) { c[arg(12u) + batch * M * N + row * N + col] = {{T}}(acc); }
}
