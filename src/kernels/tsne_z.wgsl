// Z = Σ_i Σq_i, the sum of the repulsion's third column, in one workgroup: each of 64 threads
// sums points lid, lid + 64, …, then thread 0 adds the 64 in order (one barrier). Used on CPU
// adapters, where it replaces a strided copy of the column and a reduction (two dispatches,
// ~1 ms an iteration at 10,000 points on lavapipe, loaded). A fixed order: deterministic.
// Parameters: [N]
@group(0) @binding(0) var<storage, read_write> z: array<f32>;  // [1]
@group(0) @binding(1) var<storage, read> rep: array<vec4<f32>>;  // [N] (fx, fy, Σq, 0)
var<workgroup> part: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32) {
  let n = arg(0u);
  var s = 0.0;
  for (var i = lid; i < n; i += 64u) { s += rep[i].z; }
  part[lid] = s;
  workgroupBarrier();
  if (lid == 0u) {
    for (var t = 1u; t < 64u; t++) { s += part[t]; }
    z[0] = s;
  }
}
