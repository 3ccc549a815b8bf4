// The interpolation grid of the FFT repulsion for this iteration, from the embedding's bounding
// box (computed on the GPU, so the loop never waits for the host). One thread.
// The spacing h is a power of 2^(1/4), the smallest that covers the box: the transformed kernels
// depend only on h and G, so they are recomputed (through the indirect dispatch counts in
// `args`) only when h moves to another step — rarely, once the map has stopped growing fast.
// frame: [0..1] grid origin (centred coordinates), [2] h, [3..4] centre of the box, [5] the
// fixed-point scale of the charges (a power of two: a node's sum stays below 2^62), [6..7] the
// h step and G the kernels were last transformed for.
// Parameters: [N points, G nodes per side, workgroups of tsne_fft_kernels, of one FFT pass]
// #include "tsne_fft_common.wgsl"
@group(0) @binding(0) var<storage, read_write> frame: array<f32>;
@group(0) @binding(1) var<storage, read_write> args: array<u32>;  // two (x, y, z) dispatch counts
@group(0) @binding(2) var<storage, read> lo: array<f32>;  // [2] per-axis minimum
@group(0) @binding(3) var<storage, read> hi: array<f32>;  // [2] per-axis maximum

@compute @workgroup_size(1)
fn main() {
  let n = f32(arg(0u));
  let g = f32(arg(1u));
  let centre = 0.5 * vec2<f32>(lo[0] + hi[0], lo[1] + hi[1]);
  let extent = max(max(hi[0] - lo[0], hi[1] - lo[1]), 1e-6);
  // Cubic stencils reach one node below and two above the point's cell: keep a node of margin
  // below and three above, so that every stencil is inside the grid.
  let step = ceil(4.0 * log2(extent / (g - 4.0)));
  let h = exp2(step / 4.0);
  frame[0] = lo[0] - centre.x - h;
  frame[1] = lo[1] - centre.y - h;
  frame[2] = h;
  frame[3] = centre.x;
  frame[4] = centre.y;
  // A node sums at most N unit charges with weights below 2 in magnitude.
  frame[5] = exp2(61.0 - ceil(log2(2.0 * n)));
  let stale = step != frame[6] || g != frame[7];
  frame[6] = step;
  frame[7] = g;
  args[0] = select(0u, arg(2u), stale);
  args[1] = 1u;
  args[2] = 1u;
  args[3] = select(0u, arg(3u), stale);
  args[4] = 1u;
  args[5] = 1u;
}
