// Spreads a unit charge per point onto the G×G grid with cubic Lagrange weights over a 4×4
// stencil. Sums are 64-bit fixed point, added with two u32 atomics and a carry: integer
// addition is associative, so the grid is the same whatever order the threads run in — the map
// stays deterministic, as float atomics would not leave it.
// Parameters: [N, G]
// #include "tsne_fft_common.wgsl"
@group(0) @binding(0) var<storage, read_write> acc: array<atomic<u32>>;  // [G, G, 2] (lo, hi)
@group(0) @binding(1) var<storage, read> y: array<vec2<f32>>;            // [N]
@group(0) @binding(2) var<storage, read> frame: array<f32>;

fn add64(node: u32, v: f32) {
  let w = split64(v);  // v is an integer-valued f32 below 2^62 in magnitude (tsne_fft_common.wgsl)
  let lo = w.x;
  let old = atomicAdd(&acc[2u * node], lo);
  let carry = select(0u, 1u, old + lo < old);
  // The high word changes by hi + carry: nothing for a positive v that did not carry, nor for a
  // negative one (hi = −1) that did. Skipping those adds leaves the same sums with fewer atomics.
  let high = w.y + carry;
  if (high != 0u) { atomicAdd(&acc[2u * node + 1u], high); }
}

// NARROW (CPU adapters, TsneRepulsion::charge_values): 32-bit sums, one atomic a node where the
// 64-bit ones took two (the high word changes for nearly every positive weight): lavapipe does
// each atomic one lane at a time, and they were the spread's cost. The scale is 2^-31 of the
// 64-bit one, so a node's sum stays below 2^30; a unit charge's weight is then rounded to
// 2^-(30 - ⌈log2 2N⌉) (3e-5 at 10,000 points, 2e-3 at a million), far below the cubic
// interpolation's own error (a few percent at the default spacing).
const NARROW: bool = {{NARROW}};

fn add32(node: u32, v: f32) {
  let word = bitcast<u32>(i32(v));  // v is an integer-valued f32 below 2^30 in magnitude
  if (word != 0u) { atomicAdd(&acc[node], word); }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_group(wid, nwg) * 256u + lid;
  let g = arg(1u);
  if (i >= arg(0u)) { return; }
  let p = y[i] - vec2<f32>(frame[3], frame[4]);
  let st = stencil(p, vec2<f32>(frame[0], frame[1]), frame[2], g);
  if (NARROW) {
    let scale = frame[5] * 4.656612873077393e-10;  // 2^-31
    for (var a = 0u; a < 4u; a++) {
      for (var b = 0u; b < 4u; b++) {
        add32((st.cell.y + a - 1u) * g + st.cell.x + b - 1u, round(scale * st.wy[a] * st.wx[b]));
      }
    }
    return;
  }
  for (var a = 0u; a < 4u; a++) {
    for (var b = 0u; b < 4u; b++) {
      add64((st.cell.y + a - 1u) * g + st.cell.x + b - 1u, round(frame[5] * st.wy[a] * st.wx[b]));
    }
  }
}
