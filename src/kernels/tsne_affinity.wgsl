// t-SNE input affinities: for each point, the Gaussian bandwidth β_i that gives its K
// neighbours' conditional distribution p_{j|i} ∝ exp(−β_i·d_ij) the target perplexity, found by
// bisection on the entropy (as in van der Maaten's reference implementation). One thread a row.
// Parameters: [N, log(perplexity) bits]
@group(0) @binding(0) var<storage, read_write> p: array<f32>;  // [N, K] out
@group(0) @binding(1) var<storage, read> d: array<f32>;        // [N, K] squared distances
const K: u32 = {{K}}u;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_group(wid, nwg) * 64u + lid;
  if (i >= arg(0u)) { return; }
  let goal = arg_f32(1u);
  let base = i * K;
  let d0 = d[base];  // subtract the nearest distance: exp never underflows to all zeros
  var beta = 1.0;
  var lo = 0.0;
  var hi = 0x1.fffffep+127f;
  for (var iter = 0; iter < 100; iter++) {
    var sum = 0.0;
    var weighted = 0.0;
    for (var j = 0u; j < K; j++) {
      let dj = d[base + j] - d0;
      let w = exp(-beta * dj);
      sum += w;
      weighted += w * dj;
    }
    let entropy = log(sum) + beta * weighted / sum;
    if (abs(entropy - goal) < 1e-5) { break; }
    if (entropy > goal) {
      lo = beta;
      beta = select(beta * 2.0, (beta + hi) * 0.5, hi < 0x1.fffffep+127f);
    } else {
      hi = beta;
      beta = (beta + lo) * 0.5;
    }
  }
  var sum = 0.0;
  for (var j = 0u; j < K; j++) { sum += exp(-beta * (d[base + j] - d0)); }
  for (var j = 0u; j < K; j++) { p[base + j] = exp(-beta * (d[base + j] - d0)) / sum; }
}
