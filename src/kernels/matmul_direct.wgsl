// Register tiling straight from the buffers, laid out for CPU adapters (lavapipe): what
// Tensor::matmul runs there (TiledParams with bk = 0). lavapipe runs a workgroup's invocations
// as the lanes of SIMD registers and emulates workgroup memory and barriers, so this kernel has
// neither. A workgroup of WG threads computes TM rows × WG·TN columns: the rows depend only on the
// workgroup id, so A's loads are uniform (lavapipe makes them one scalar load, not a gather),
// and thread x takes columns x, x + WG, … (B's loads gather one value per lane).
// The host unrolls the per-k body (INNER) with constant register names.
@group(0) @binding(0) var<storage, read_write> c: array<{{T}}>;
@group(0) @binding(1) var<storage, read> a: array<{{T}}>;
@group(0) @binding(2) var<storage, read> b: array<{{T}}>;
const TM: u32 = {{TM}}u;
const TN: u32 = {{TN}}u;
const WG: u32 = {{WG}}u;

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let M = mm_m(); let N = mm_n(); let K = mm_k();
  let tile = mm_locate(linear_group(wid, nwg));
  // Past the last batch (the grid is rounded up) the work is done on batch 0 and not stored,
  // which keeps control flow uniform for the loads below.
  let batch = select(0u, tile.batch, tile.valid);
  let r0 = tile.row * TM;
  let c0 = tile.col * WG * TN + lid;
  let bases = mm_batch_bases(batch);
  let a_rs = arg(6u); let a_cs = arg(7u); let b_rs = arg(8u); let b_cs = arg(9u);
  // Rows past M and columns past N are clamped: they compute values that are not stored.
{{DECLARE}}
  for (var k = 0u; k < K; k++) {
{{INNER}}
  }
  if (!tile.valid) { return; }
  let c_base = arg(12u) + batch * M * N;
{{STORE}}
}
