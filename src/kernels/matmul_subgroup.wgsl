// Rung 8: subgroup operations share operands. A subgroup owns 4 rows and 4·S columns (S lanes,
// 4 columns each). Per chunk of S steps along K, lane l loads A[row, k0 + l] for its 4 rows (one
// coalesced load per row instead of S), then every lane takes the value for step kk from lane
// kk with subgroupShuffle. The body is generated unrolled by the host (constant register
// indices, as in matmul_reg_tiled.wgsl).
@group(0) @binding(0) var<storage, read_write> c: array<{{T}}>;
@group(0) @binding(1) var<storage, read> a: array<{{T}}>;
@group(0) @binding(2) var<storage, read> b: array<{{T}}>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32, @builtin(subgroup_size) sg: u32,
        @builtin(subgroup_invocation_id) lane: u32) {
  let M = mm_m(); let N = mm_n(); let K = mm_k();
  let tiles_m = arg(3u); let tiles_n = arg(4u);  // tiles of 4 rows × 4·S columns, one per subgroup
  let subgroup = linear_group(wid, nwg) * (64u / sg) + lid / sg;
  let batch = subgroup / (tiles_m * tiles_n);
  let valid = batch < arg(5u);
  let t = subgroup % (tiles_m * tiles_n);
  let r0 = (t / tiles_n) * 4u;
  let c0 = (t % tiles_n) * 4u * sg + lane * 4u;
  let bases = mm_batch_bases(min(batch, arg(5u) - 1u));
  let a_rs = arg(6u); let a_cs = arg(7u); let b_rs = arg(8u); let b_cs = arg(9u);
{{BODY}}
}
