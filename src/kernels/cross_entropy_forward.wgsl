// Cross-entropy forward in one kernel (nn::cross_entropy, issue 36): each thread takes whole rows
// of the [N, C] logits (rows a grid apart), computes the row's logsumexp (max first, then the
// sum of exp(x - max)) and loss_i = lse_i - x[i, y_i], keeps lse_i for the backward, and adds
// loss_i / N into its own sum; the workgroup sums its threads in shared memory and writes one
// partial. With one workgroup (N <= 16·256 rows) partial[0] is the loss itself.
// A label outside [0, C) sets fault bit 4 (reported at the next read) and counts as 0 loss.
// Parameters: [N, C, groups]
@group(0) @binding(0) var<storage, read_write> partial: array<f32>;  // [groups]
@group(0) @binding(1) var<storage, read_write> lse: array<f32>;      // [N]
@group(0) @binding(2) var<storage, read> logits: array<f32>;         // [N, C] dense
@group(0) @binding(3) var<storage, read> labels: array<i32>;         // [N]
@group(0) @binding(4) var<storage, read_write> fault: atomic<u32>;

var<workgroup> sums: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = arg(0u);
  let c = arg(1u);
  let groups = arg(2u);
  let g = linear_group(wid, nwg);
  let inv_n = 1.0 / f32(n);
  var acc = 0.0;
  if (g < groups) {
    for (var row = g * 256u + lid; row < n; row += groups * 256u) {
      let base = row * c;
      var m = logits[base];
      for (var j = 1u; j < c; j++) { m = max(m, logits[base + j]); }
      var s = 0.0;
      for (var j = 0u; j < c; j++) { s += exp(logits[base + j] - m); }
      let l = log(s) + m;
      lse[row] = l;
      let y = labels[row];
      if (y < 0 || u32(y) >= c) {
        atomicOr(&fault, 4u);
      } else {
        acc += (l - logits[base + u32(y)]) * inv_n;
      }
    }
  }
  sums[lid] = acc;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (lid < s) { sums[lid] += sums[lid + s]; }
    workgroupBarrier();
  }
  if (lid == 0u && g < groups) { partial[g] = sums[0]; }
}
