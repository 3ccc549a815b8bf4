// Array 4 (q's product) after its inverse column pass, which covered columns 0…M/2 only: q is
// real, so each row is Hermitian — column c > M/2 is the conjugate of column M − c. Fills those
// columns of the G rows the row pass transforms next.
// Parameters: [G]
// #include "tsne_fft_common.wgsl"
@group(0) @binding(0) var<storage, read_write> grid: array<vec2<f32>>;  // [5, M, M]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let g = arg(0u);
  let m = 2u * g;
  let e = linear_group(wid, nwg) * 256u + lid;
  let half = m / 2u - 1u;  // columns M/2 + 1 … M − 1
  if (e >= g * half) { return; }
  let r = e / half;
  let c = m / 2u + 1u + e % half;
  let base = 4u * m * m + r * m;
  let t = grid[base + m - c];
  grid[base + c] = vec2<f32>(t.x, -t.y);
}
