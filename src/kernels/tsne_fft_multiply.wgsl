// Pointwise products of the transformed charges (array 0) with the two transformed kernels
// (arrays 1 and 2, kept for later iterations) into arrays 3 and 4. Only columns 0…M/2 of the
// charges were transformed: the charges are real, so column c > M/2 is the conjugate of the
// transform at (−r, −c). q is real too: its product is needed at columns 0…M/2 only.
// Parameters: [M·M, M]
// #include "tsne_fft_common.wgsl"
@group(0) @binding(0) var<storage, read_write> grid: array<vec2<f32>>;  // [5, M, M]

fn cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> { return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let mm = arg(0u);
  let e = linear_group(wid, nwg) * 256u + lid;
  if (e >= mm) { return; }
  let m = arg(1u);
  let r = div_line(e, m);
  let c = e - r * m;
  var charges = grid[e];
  if (2u * c > m) {
    let t = grid[select(m - r, 0u, r == 0u) * m + (m - c)];
    charges = vec2<f32>(t.x, -t.y);
  }
  grid[3u * mm + e] = cmul(charges, grid[mm + e]);
  if (2u * c <= m) { grid[4u * mm + e] = cmul(charges, grid[2u * mm + e]); }
}
