// Reads the convolved potentials back at each point with the spreading's cubic weights:
// Σ_j F(y_i − y_j) = Σ_j q_ij²·(y_i − y_j) (array 3) and Σ_j q_ij (array 4, minus 1 for j = i).
// Parameters: [N, G, 1 / M² as f32 bits]
// #include "tsne_fft_common.wgsl"
@group(0) @binding(0) var<storage, read_write> out: array<vec4<f32>>;  // [N] (fx, fy, Σq, 0)
@group(0) @binding(1) var<storage, read> y: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read> grid: array<vec2<f32>>;       // [5, M, M] (3 and 4 convolved)
@group(0) @binding(3) var<storage, read> frame: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_group(wid, nwg) * 256u + lid;
  let g = arg(1u);
  if (i >= arg(0u)) { return; }
  let m = 2u * g;
  let p = y[i] - vec2<f32>(frame[3], frame[4]);
  let st = stencil(p, vec2<f32>(frame[0], frame[1]), frame[2], g);
  var phi = vec3<f32>(0.0);
  for (var a = 0u; a < 4u; a++) {
    for (var b = 0u; b < 4u; b++) {
      let e = (st.cell.y + a - 1u) * m + st.cell.x + b - 1u;
      phi += (st.wy[a] * st.wx[b]) * vec3<f32>(grid[3u * m * m + e], grid[4u * m * m + e].x);
    }
  }
  phi *= arg_f32(2u);
  out[i] = vec4<f32>(phi.xy, phi.z - 1.0, 0.0);
}
