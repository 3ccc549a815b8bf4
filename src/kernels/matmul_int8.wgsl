// Rung 11: int8 with packed dot products. A is [M, K/4] and Bᵀ is [N, K/4] in u32 words of four
// int8 values; dot4I8Packed multiplies four pairs and sums them in one instruction. Each thread
// computes 4×4 outputs in i32, then scales by the per-row and per-column f32 factors. The body
// is generated unrolled by the host (constant register indices, as in matmul_reg_tiled.wgsl).
// Parameters: [M, N, K4 (words per row), tiles_m, tiles_n]
@group(0) @binding(0) var<storage, read_write> c: array<f32>;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> bt: array<u32>;
@group(0) @binding(3) var<storage, read> a_scale: array<f32>;
@group(0) @binding(4) var<storage, read> b_scale: array<f32>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let M = arg(0u); let N = arg(1u); let K4 = arg(2u);
  let tiles_n = arg(4u);
  let t = linear_group(wid, nwg);
  if (t >= arg(3u) * tiles_n) { return; }
  let r0 = (t / tiles_n) * 64u + lid.y * 4u;
  let c0 = (t % tiles_n) * 64u + lid.x;
{{BODY}}
}
