// Layer norm's forward over the last axis of dense [rows, C] f32 in one kernel (nn::LayerNorm,
// issue 36): a workgroup a row, its threads striding the row, each row sum a tree in workgroup
// memory: y = (x − μ)·r·w + b with μ = mean x, r = 1/√(mean (x − μ)² + eps); (μ, r) kept in
// stats[2·row..] for the backward (layer_norm_backward.wgsl). Parameters: [rows, C, eps bits]
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read_write> stats: array<f32>;
// #include "row_sum.wgsl"

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = linear_group(wid, nwg);
  if (row >= arg(0u)) { return; }  // uniform per workgroup: the barriers stay uniform
  let c = arg(1u);
  let inv_c = 1.0 / f32(c);
  let base = row * c;
  var s = vec2<f32>(0.0);
  for (var j = lid; j < c; j += 256u) { s.x += x[base + j]; }
  let mu = row_sum(lid, s).x * inv_c;
  s = vec2<f32>(0.0);
  for (var j = lid; j < c; j += 256u) {
    let d = x[base + j] - mu;
    s.x += d * d;
  }
  let r = inverseSqrt(row_sum(lid, s).x * inv_c + arg_f32(2u));
  for (var j = lid; j < c; j += 256u) { out[base + j] = (x[base + j] - mu) * r * w[j] + b[j]; }
  if (lid == 0u) {
    stats[2u * row] = mu;
    stats[2u * row + 1u] = r;
  }
}
