// Neighbour descent's reverse lists on the GPU (sample_reverse_gpu in graph_gpu.cpp): for every
// point i, up to R points that have i among their k neighbours, read from the incoming-edge CSR
// (incoming_edges.wgsl) and sampled evenly over its list in edge order, −1 where there are
// fewer: the same numbers as the host's sample_reverse, so descent gives the same lists.
// Parameters: [N, k, R]. rev: [offset_0 … offset_N, edge ids …] (an edge id e has source e / k).
@group(0) @binding(0) var<storage, read> rev: array<i32>;             // [N + 1 + N·k]
@group(0) @binding(1) var<storage, read_write> sampled: array<i32>;   // [N, R]

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = arg(0u);
  let k = arg(1u);
  let r = arg(2u);
  let slot = linear_group(wid, nwg) * 64u + lid;  // one thread a slot of [N, R]
  if (slot >= n * r) { return; }
  let i = slot / r;
  let t = slot % r;
  let b = u32(rev[i]);
  let deg = u32(rev[i + 1u]) - b;
  var v = -1;
  if (t < min(deg, r)) {
    // ⌊t·deg / r⌋ without overflow (deg may be near N): deg = q·r + m.
    let pick = select(t * (deg / r) + (t * (deg % r)) / r, t, deg <= r);
    v = rev[n + 1u + b + pick] / i32(k);
  }
  sampled[slot] = v;
}
