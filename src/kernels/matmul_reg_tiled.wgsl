// Workgroup-memory block tiling with register tiles (ladder rungs 7, 9 and 12).
// A workgroup computes a BM×BN tile of C; each of its (BM/TM)·(BN/TN) threads computes TM×TN
// outputs spread a thread-row/column apart, so workgroup-memory reads are conflict-free and the
// final stores coalesce. Per step of BK along K, the A and B tiles are staged in workgroup
// memory (zero-padded at the edges); with DOUBLE = true the next step's tiles are loaded into
// registers while the current ones are multiplied. Accumulates in ACC.
@group(0) @binding(0) var<storage, read_write> c: array<{{T}}>;
@group(0) @binding(1) var<storage, read> a: array<{{T}}>;
@group(0) @binding(2) var<storage, read> b: array<{{T}}>;

const BM: u32 = {{BM}}u;
const BN: u32 = {{BN}}u;
const BK: u32 = {{BK}}u;
const TM: u32 = {{TM}}u;
const TN: u32 = {{TN}}u;
const TX: u32 = BN / TN;  // threads along a row of the tile
const TY: u32 = BM / TM;
const THREADS: u32 = TX * TY;
const A_LOADS: u32 = (BM * BK + THREADS - 1u) / THREADS;
const B_LOADS: u32 = (BK * BN + THREADS - 1u) / THREADS;
const DOUBLE: bool = {{DOUBLE}};
const SWIZZLE: u32 = {{SWIZZLE}}u;

var<workgroup> a_tile: array<{{ACC}}, BK * BM>;  // [k][m]
var<workgroup> b_tile: array<{{ACC}}, BK * BN>;  // [k][n]

@compute @workgroup_size({{THREADS}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let M = mm_m(); let N = mm_n(); let K = mm_k();
  let tiles_m = arg(3u); let tiles_n = arg(4u);
  let w = linear_group(wid, nwg);
  let batch = w / (tiles_m * tiles_n);
  let valid = batch < arg(5u);  // uniform: no early return before barriers
  let tile = mm_tile(w % (tiles_m * tiles_n), tiles_m, tiles_n, SWIZZLE);
  let row0 = tile.x * BM;
  let col0 = tile.y * BN;
  let bases = mm_batch_bases(batch);
  let a_rs = arg(6u); let a_cs = arg(7u); let b_rs = arg(8u); let b_cs = arg(9u);
  let tx = lid % TX;
  let ty = lid / TX;

  var acc: array<{{ACC}}, TM * TN>;
  var a_next: array<{{ACC}}, A_LOADS>;
  var b_next: array<{{ACC}}, B_LOADS>;
  // Loads of step k0 into registers: consecutive threads take consecutive k of A (row-major A
  // reads coalesce) and consecutive n of B.
  for (var l = 0u; l < A_LOADS; l++) {
    let i = lid + l * THREADS;
    let m = i / BK; let kk = i % BK;
    let r = row0 + m; let k = kk;
    var v: {{ACC}} = 0.0;
    if (valid && i < BM * BK && r < M && k < K) { v = {{ACC}}(a[bases.x + r * a_rs + k * a_cs]); }
    a_next[l] = v;
  }
  for (var l = 0u; l < B_LOADS; l++) {
    let i = lid + l * THREADS;
    let kk = i / BN; let n = i % BN;
    let col = col0 + n; let k = kk;
    var v: {{ACC}} = 0.0;
    if (valid && i < BK * BN && col < N && k < K) { v = {{ACC}}(b[bases.y + k * b_rs + col * b_cs]); }
    b_next[l] = v;
  }
  for (var k0 = 0u; k0 < K; k0 += BK) {
    for (var l = 0u; l < A_LOADS; l++) {
      let i = lid + l * THREADS;
      if (i < BM * BK) { a_tile[(i % BK) * BM + i / BK] = a_next[l]; }
    }
    for (var l = 0u; l < B_LOADS; l++) {
      let i = lid + l * THREADS;
      if (i < BK * BN) { b_tile[i] = b_next[l]; }
    }
    workgroupBarrier();
    let k1 = k0 + BK;
    if (DOUBLE && k1 < K) {  // prefetch the next step while this one computes
      for (var l = 0u; l < A_LOADS; l++) {
        let i = lid + l * THREADS;
        let r = row0 + i / BK; let k = k1 + i % BK;
        var v: {{ACC}} = 0.0;
        if (valid && i < BM * BK && r < M && k < K) { v = {{ACC}}(a[bases.x + r * a_rs + k * a_cs]); }
        a_next[l] = v;
      }
      for (var l = 0u; l < B_LOADS; l++) {
        let i = lid + l * THREADS;
        let col = col0 + i % BN; let k = k1 + i / BN;
        var v: {{ACC}} = 0.0;
        if (valid && i < BK * BN && col < N && k < K) { v = {{ACC}}(b[bases.y + k * b_rs + col * b_cs]); }
        b_next[l] = v;
      }
    }
    for (var kk = 0u; kk < BK; kk++) {
      var ar: array<{{ACC}}, TM>;
      var br: array<{{ACC}}, TN>;
      for (var i = 0u; i < TM; i++) { ar[i] = a_tile[kk * BM + ty + i * TY]; }
      for (var j = 0u; j < TN; j++) { br[j] = b_tile[kk * BN + tx + j * TX]; }
      for (var i = 0u; i < TM; i++) {
        for (var j = 0u; j < TN; j++) { acc[i * TN + j] = fma(ar[i], br[j], acc[i * TN + j]); }
      }
    }
    workgroupBarrier();
    if (!DOUBLE && k1 < K) {
      for (var l = 0u; l < A_LOADS; l++) {
        let i = lid + l * THREADS;
        let r = row0 + i / BK; let k = k1 + i % BK;
        var v: {{ACC}} = 0.0;
        if (valid && i < BM * BK && r < M && k < K) { v = {{ACC}}(a[bases.x + r * a_rs + k * a_cs]); }
        a_next[l] = v;
      }
      for (var l = 0u; l < B_LOADS; l++) {
        let i = lid + l * THREADS;
        let col = col0 + i % BN; let k = k1 + i / BN;
        var v: {{ACC}} = 0.0;
        if (valid && i < BK * BN && col < N && k < K) { v = {{ACC}}(b[bases.y + k * b_rs + col * b_cs]); }
        b_next[l] = v;
      }
    }
  }
  if (!valid) { return; }
  let c_base = arg(12u) + batch * M * N;
  for (var i = 0u; i < TM; i++) {
    let r = row0 + ty + i * TY;
    if (r >= M) { continue; }
    for (var j = 0u; j < TN; j++) {
      let col = col0 + tx + j * TX;
      if (col < N) { c[c_base + r * N + col] = {{T}}(acc[i * TN + j]); }
    }
  }
}
