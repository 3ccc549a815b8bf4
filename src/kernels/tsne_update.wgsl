// One t-SNE gradient step with momentum and per-coordinate gains (van der Maaten's reference
// implementation): gain grows by 0.2 where the gradient's sign opposes the last update and
// shrinks ×0.8 otherwise (floor 0.01); update ← momentum·update − lr·gain·grad; y ← y + update.
// grad_i = 4·(exaggeration·attract_i − repulse_i / Z).
// An update longer than max_step is shortened to it (openTSNE's max_step_norm): with learning
// rates of N/12, a point with a large gradient would otherwise shoot off and stretch the map
// (and the FFT grid) for good.
// Parameters: [N, lr, momentum, exaggeration, max_step]; Z (the sum of all q) is read from a
// buffer, so the loop never waits for the host.
@group(0) @binding(0) var<storage, read_write> y: array<vec2<f32>>;
@group(0) @binding(1) var<storage, read_write> update: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read_write> gains: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read> attract: array<vec2<f32>>;
@group(0) @binding(4) var<storage, read> repulse: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> z: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_group(wid, nwg) * 256u + lid;
  if (i >= arg(0u)) { return; }
  let grad = 4.0 * (arg_f32(3u) * attract[i] - repulse[i].xy / z[0]);
  let u = update[i];
  var g = gains[i];
  g = select(g * 0.8, g + 0.2, (grad > vec2<f32>(0.0)) != (u > vec2<f32>(0.0)));
  g = max(g, vec2<f32>(0.01));
  gains[i] = g;
  var nu = arg_f32(2u) * u - arg_f32(1u) * g * grad;
  let len = length(nu);
  if (len > arg_f32(4u)) { nu *= arg_f32(4u) / len; }
  update[i] = nu;
  y[i] = y[i] + nu;
}
