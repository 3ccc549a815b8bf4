// Workgroup-memory block tiling with register tiles (ladder rungs 7, 9 and 12; what
// Tensor::matmul runs). A workgroup computes a BM×BN tile of C; each of its (BM/TM)·(BN/TN)
// threads computes TM×TN outputs. When TM and TN are multiples of 4 a thread's rows and columns
// are contiguous and it reads the tiles from workgroup memory as vec4 (a quarter of the
// instructions, and vector FMAs); otherwise they are spread a thread-row/column apart, so scalar
// reads are conflict-free and the final stores coalesce. Per step of BK along K, the A and B tiles are
// staged in workgroup memory (zero-padded at the edges); with double buffering the next step's
// tiles are loaded into registers while the current ones are multiplied. Accumulates in ACC.
//
// When A and B are row-major with K and N multiples of 4, B's staging loads are vec4s along N: a
// quarter of its load instructions and address arithmetic. Measured on the H200
// (BENCHMARKS.md, v10), staging did not overlap the FMAs at all: the kernel took the sum of its
// compute-only and staging-only times.
//
// The host generates the per-thread code fully unrolled (the DECLARE, LOAD, ... blocks): every register array
// index is a constant, so the accumulators stay in registers (indexing a WGSL array with a loop
// variable put them in local memory on NVIDIA's Vulkan driver: 7× slower, see BENCHMARKS.md).
@group(0) @binding(0) var<storage, read_write> c: array<{{T}}>;
@group(0) @binding(1) var<storage, read> a: array<{{T}}>;
@group(0) @binding(2) var<storage, read> b: array<{{BV}}>;  // {{T}}, or vec4 along N (vec4 staging)

const BM: u32 = {{BM}}u;
const BN: u32 = {{BN}}u;
const BK: u32 = {{BK}}u;
const TM: u32 = {{TM}}u;
const TN: u32 = {{TN}}u;
const TX: u32 = BN / TN;  // threads along a row of the tile
const TY: u32 = BM / TM;
const THREADS: u32 = TX * TY;
const SWIZZLE: u32 = {{SWIZZLE}}u;

{{SHARED}}

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
{{DECLARE}}
  var k1 = 0u;
{{LOAD}}
  for (var k0 = 0u; k0 < K; k0 += BK) {
{{STAGE}}
    workgroupBarrier();
    k1 = k0 + BK;
    if ({{DOUBLE}} && k1 < K) {
{{LOAD}}
    }
    // BK rank-1 updates, unrolled by the host with constant tile offsets.
{{COMPUTE}}
    workgroupBarrier();
    if (!{{DOUBLE}} && k1 < K) {
{{LOAD}}
    }
  }
  if (!valid) { return; }
  let c_base = arg(12u) + batch * M * N;
{{STORE}}
}
