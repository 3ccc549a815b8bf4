// Cross-entropy backward in one kernel (nn::cross_entropy, issue 36): the gradient of the mean
// loss with respect to the logits, d[i, j] = g · (exp(x[i, j] − lse_i) − [j = y_i]) / N, one
// thread an element, lse from the forward kernel and g the incoming gradient (a scalar).
// Parameters: [N, C]
@group(0) @binding(0) var<storage, read_write> d: array<f32>;  // [N, C]
@group(0) @binding(1) var<storage, read> logits: array<f32>;   // [N, C] dense
@group(0) @binding(2) var<storage, read> lse: array<f32>;      // [N]
@group(0) @binding(3) var<storage, read> labels: array<i32>;   // [N]
@group(0) @binding(4) var<storage, read> g: array<f32>;        // [1]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = arg(0u);
  let c = arg(1u);
  let i = linear_group(wid, nwg) * 256u + lid;
  if (i >= n * c) { return; }
  let row = i / c;
  let j = i - row * c;
  var p = exp(logits[i] - lse[row]);
  if (labels[row] == i32(j)) { p -= 1.0; }
  d[i] = p * (g[0] / f32(n));
}
