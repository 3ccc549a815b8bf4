// UMAP's fuzzy membership of each point's K nearest neighbours (McInnes et al. 2018):
// ρ_i = distance to the nearest neighbour, σ_i by bisection so that
// Σ_j exp(−max(0, d_ij − ρ_i) / σ_i) = log2(K); w_ij = exp(−max(0, d_ij − ρ_i) / σ_i).
// Distances arrive squared (from knn_exact) and are square-rooted here. One thread a point.
// Parameters: [N]
@group(0) @binding(0) var<storage, read_write> w: array<f32>;  // [N, K] out
@group(0) @binding(1) var<storage, read> d2: array<f32>;       // [N, K]
const K: u32 = {{K}}u;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_group(wid, nwg) * 64u + lid;
  if (i >= arg(0u)) { return; }
  let base = i * K;
  var rho = 0.0;
  for (var j = 0u; j < K; j++) {  // the nearest positive distance (duplicates have distance 0)
    let d = sqrt(d2[base + j]);
    if (d > 0.0) { rho = d; break; }
  }
  let goal = log2(f32(K));
  var lo = 0.0;
  var hi = 0x1.fffffep+127f;
  var sigma = 1.0;
  for (var iter = 0; iter < 64; iter++) {
    var sum = 0.0;
    for (var j = 0u; j < K; j++) { sum += exp(-max(0.0, sqrt(d2[base + j]) - rho) / sigma); }
    if (abs(sum - goal) < 1e-5) { break; }
    if (sum > goal) {
      hi = sigma;
      sigma = (lo + hi) * 0.5;
    } else {
      lo = sigma;
      sigma = select(sigma * 2.0, (lo + hi) * 0.5, hi < 0x1.fffffep+127f);
    }
  }
  for (var j = 0u; j < K; j++) { w[base + j] = exp(-max(0.0, sqrt(d2[base + j]) - rho) / sigma); }
}
