// Rung 6: vec4 loads and stores. Each thread computes 4×4 outputs; B rows and C rows are read
// and written as vec4 (16 bytes per access), A is read a column of 4 at a time. Needs B and C
// contiguous with N and offsets multiples of 4 (the host checks).
@group(0) @binding(0) var<storage, read_write> c: array<vec4<{{T}}>>;
@group(0) @binding(1) var<storage, read> a: array<{{T}}>;
@group(0) @binding(2) var<storage, read> b: array<vec4<{{T}}>>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let M = mm_m(); let N = mm_n(); let K = mm_k();
  let tile = mm_locate(linear_group(wid, nwg));
  if (!tile.valid) { return; }
  let batch = tile.batch;
  let r0 = tile.row * 64u + lid.y * 4u;
  let c4 = tile.col * 16u + lid.x;  // index of a group of 4 columns
  if (c4 * 4u >= N) { return; }
  let bases = mm_batch_bases(batch);
  let a_rs = arg(6u); let a_cs = arg(7u); let b_rs4 = arg(8u) / 4u;
  var acc: array<vec4<f32>, 4>;
  for (var k = 0u; k < K; k++) {
    let bv = vec4<f32>(b[bases.y / 4u + k * b_rs4 + c4]);
    for (var i = 0u; i < 4u; i++) {
      let r = min(r0 + i, M - 1u);
      acc[i] = fma(vec4<f32>(f32(a[bases.x + r * a_rs + k * a_cs])), bv, acc[i]);
    }
  }
  let c_base4 = (arg(12u) + batch * M * N) / 4u;
  for (var i = 0u; i < 4u; i++) {
    if (r0 + i < M) { c[c_base4 + (r0 + i) * (N / 4u) + c4] = vec4<{{T}}>(acc[i]); }
  }
}
