// One SGD step for one parameter, fused: weight decay, momentum (optionally Nesterov), update.
// Parameters: [n, lr, momentum, weight_decay, nesterov]
@group(0) @binding(0) var<storage, read_write> param: array<f32>;
@group(0) @binding(1) var<storage, read> grad: array<f32>;
@group(0) @binding(2) var<storage, read_write> buf: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_group(wid, nwg) * 256u + lid;
  if (i >= arg(0u)) { return; }
  let momentum = arg_f32(2u);
  var p = param[i];
  var d = grad[i] + arg_f32(3u) * p;
  if (momentum != 0.0) {
    let b = momentum * buf[i] + d;
    buf[i] = b;
    d = select(b, d + momentum * b, arg(4u) != 0u);
  }
  param[i] = p - arg_f32(1u) * d;
}
