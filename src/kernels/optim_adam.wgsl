// One Adam/AdamW step for one parameter, fused: reads the gradient once, updates the moments
// and the parameter in place.
// Parameters: [n, lr, beta1, beta2, eps, weight_decay, 1/(1−beta1^t), 1/(1−beta2^t), decoupled]
@group(0) @binding(0) var<storage, read_write> param: array<f32>;
@group(0) @binding(1) var<storage, read> grad: array<f32>;
@group(0) @binding(2) var<storage, read_write> m: array<f32>;
@group(0) @binding(3) var<storage, read_write> v: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_group(wid, nwg) * 256u + lid;
  if (i >= arg(0u)) { return; }
  let lr = arg_f32(1u);
  let beta1 = arg_f32(2u);
  let beta2 = arg_f32(3u);
  let wd = arg_f32(5u);
  let decoupled = arg(8u) != 0u;
  var p = param[i];
  var g = grad[i];
  if (!decoupled) { g += wd * p; }
  let mi = beta1 * m[i] + (1.0 - beta1) * g;
  let vi = beta2 * v[i] + (1.0 - beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  if (decoupled) { p -= lr * wd * p; }
  p -= lr * (mi * arg_f32(6u)) / (sqrt(vi * arg_f32(7u)) + arg_f32(4u));
  param[i] = p;
}
