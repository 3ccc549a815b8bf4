// Arrays 1 and 2 of the FFT: the kernels at grid offsets d (wrapped, M×M). Array 1 is the force
// kernel F(d) = d / (1 + |d|²)², x in the real part and y in the imaginary part (the charges are
// real, so one complex convolution carries both); array 2 is q(d) = 1 / (1 + |d|²), for Z.
// Interpolating F itself, rather than q² with charges x, y, x²+y² as FIt-SNE does, keeps f32
// clear of cancellation between large terms that grows with the map's extent.
// Parameters: [G]
// #include "tsne_fft_common.wgsl"
@group(0) @binding(0) var<storage, read_write> grid: array<vec2<f32>>;  // [5, M, M]
@group(0) @binding(1) var<storage, read> frame: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let g = arg(0u);
  let m = 2u * g;
  let e = linear_group(wid, nwg) * 256u + lid;
  if (e >= m * m) { return; }
  let r = div_line(e, m);
  let c = e - r * m;
  let d = vec2<f32>(f32(select(i32(c), i32(c) - i32(m), c >= g)), f32(select(i32(r), i32(r) - i32(m), r >= g))) * frame[2];
  let q = 1.0 / (1.0 + dot(d, d));
  grid[m * m + e] = q * q * d;
  grid[2u * m * m + e] = vec2<f32>(q, 0.0);
}
