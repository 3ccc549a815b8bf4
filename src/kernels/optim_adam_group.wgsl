// Several parameters' Adam/AdamW steps in one dispatch (nn/optim.cpp groups them within the
// storage-binding limit, the launch seam's 8: three parameters): thread i updates element i − start_j of the
// parameter j whose range [start_j, start_j + n_j) holds i. Each parameter and its gradient are
// bound; every parameter's m and v live in one state buffer (m at state_j, v right after it),
// so k parameters take 2k + 1 bindings (3 in WebGPU's default 8). adam_step is optim_adam.wgsl's
// expression: the same bits as one parameter at a time.
// A gradient that is a pending split-K sum (lazy mode) binds its [S, n] partials instead and is
// summed at load in sum_slices.wgsl's order (generated grad_j_sum; S in the kernel's key).
// Parameters: [total, lr, beta1, beta2, eps, weight_decay, 1/(1−beta1^t), 1/(1−beta2^t),
//              decoupled, then per parameter j: start_j, n_j, state_j, then per summed
//              gradient: its partials' offset]
@group(0) @binding(0) var<storage, read_write> state: array<f32>;
{{BINDINGS}}

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
  if (i >= arg(0u)) { return; }
{{BODY}}
}
