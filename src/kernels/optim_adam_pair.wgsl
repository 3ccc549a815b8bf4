// Two parameters' Adam/AdamW steps in one dispatch (a layer's weight and bias, say): threads
// [0, n0) update parameter 0, [n0, n0 + n1) parameter 1, with optim_adam.wgsl's arithmetic
// (adam_step below is its expression, so the same bits). Eight storage bindings, WebGPU's
// default per-stage limit; the optimizer pairs parameters two by two (nn/optim.cpp).
// Parameters: [n0, lr, beta1, beta2, eps, weight_decay, 1/(1−beta1^t), 1/(1−beta2^t), decoupled, n1]
@group(0) @binding(0) var<storage, read_write> param0: array<f32>;
@group(0) @binding(1) var<storage, read> grad0: array<f32>;
@group(0) @binding(2) var<storage, read_write> m0: array<f32>;
@group(0) @binding(3) var<storage, read_write> v0: array<f32>;
@group(0) @binding(4) var<storage, read_write> param1: array<f32>;
@group(0) @binding(5) var<storage, read> grad1: array<f32>;
@group(0) @binding(6) var<storage, read_write> m1: array<f32>;
@group(0) @binding(7) var<storage, read_write> v1: array<f32>;

// (new parameter, new m, new v) from the old ones and the gradient.
fn adam_step(p_in: f32, g_in: f32, m_in: f32, v_in: f32) -> vec3<f32> {
  let lr = arg_f32(1u);
  let beta1 = arg_f32(2u);
  let beta2 = arg_f32(3u);
  let wd = arg_f32(5u);
  let decoupled = arg(8u) != 0u;
  var p = p_in;
  var g = g_in;
  if (!decoupled) { g += wd * p; }
  let mi = beta1 * m_in + (1.0 - beta1) * g;
  let vi = beta2 * v_in + (1.0 - beta2) * g * g;
  if (decoupled) { p -= lr * wd * p; }
  p -= lr * (mi * arg_f32(6u)) / (sqrt(vi * arg_f32(7u)) + arg_f32(4u));
  return vec3<f32>(p, mi, vi);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_group(wid, nwg) * 256u + lid;
  let n0 = arg(0u);
  if (i < n0) {
    let r = adam_step(param0[i], grad0[i], m0[i], v0[i]);
    param0[i] = r.x;
    m0[i] = r.y;
    v0[i] = r.z;
  } else if (i - n0 < arg(9u)) {
    let j = i - n0;
    let r = adam_step(param1[j], grad1[j], m1[j], v1[j]);
    param1[j] = r.x;
    m1[j] = r.y;
    v1[j] = r.z;
  }
}
