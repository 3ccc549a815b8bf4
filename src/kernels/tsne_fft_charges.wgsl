// Array 0 of the FFT: the grid's charges, zero-padded to M×M (M = 2G) so that the convolution is
// linear, not circular. Resets the accumulators it reads.
// Parameters: [G]
// #include "tsne_fft_common.wgsl"
@group(0) @binding(0) var<storage, read_write> grid: array<vec2<f32>>;  // [5, M, M]
@group(0) @binding(1) var<storage, read_write> acc: array<atomic<u32>>;  // [G, G, 2]
@group(0) @binding(2) var<storage, read> frame: array<f32>;

// NARROW: tsne_fft_spread.wgsl's 32-bit sums (CPU adapters), one word a node.
const NARROW: bool = {{NARROW}};

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let g = arg(0u);
  let m = 2u * g;
  let e = linear_group(wid, nwg) * 256u + lid;
  if (e >= m * m) { return; }
  let r = div_line(e, m);
  let c = e - r * m;
  var charge = 0.0;
  if (NARROW && r < g && c < g) {
    let node = r * g + c;
    charge = f32(bitcast<i32>(atomicLoad(&acc[node]))) / (frame[5] * 4.656612873077393e-10);
    atomicStore(&acc[node], 0u);
  } else if (r < g && c < g) {
    let node = r * g + c;
    let lo = atomicLoad(&acc[2u * node]);
    let hi = bitcast<i32>(atomicLoad(&acc[2u * node + 1u]));
    atomicStore(&acc[2u * node], 0u);
    atomicStore(&acc[2u * node + 1u], 0u);
    charge = (f32(hi) * 4294967296.0 + f32(lo)) / frame[5];
  }
  grid[e] = vec2<f32>(charge, 0.0);
}
