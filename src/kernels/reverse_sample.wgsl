// Neighbour descent's reverse lists on the GPU (sample_reverse_gpu in graph_gpu.cpp): for every
// point i, up to R points that have i among their k neighbours, read from the incoming edges
// (incoming_edges.wgsl) and sampled evenly over its list in edge order, −1 where there are
// fewer: the same numbers as the host's sample_reverse, so descent gives the same lists.
// One dispatch a block of targets [t0, t1), whose edge ids sit at positions from e0.
// Parameters: [k, R, t0, t1, e0] (an edge id e has source e / k).
@group(0) @binding(0) var<storage, read> offsets: array<i32>;         // [N + 1]
@group(0) @binding(1) var<storage, read> edges: array<i32>;           // positions [e0, …)
@group(0) @binding(2) var<storage, read_write> sampled: array<i32>;   // [N, R]

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let k = arg(0u);
  let r = arg(1u);
  let t0 = arg(2u);
  let slot = linear_group(wid, nwg) * 64u + lid;  // one thread a slot of the block's [t1 − t0, R]
  if (slot >= (arg(3u) - t0) * r) { return; }
  let i = t0 + slot / r;
  let t = slot % r;
  let b = u32(offsets[i]);
  let deg = u32(offsets[i + 1u]) - b;
  var v = -1;
  if (t < min(deg, r)) {
    // ⌊t·deg / r⌋ without overflow (deg may be near N): deg = q·r + m.
    let pick = select(t * (deg / r) + (t * (deg % r)) / r, t, deg <= r);
    v = edges[b - arg(4u) + pick] / i32(k);
  }
  sampled[i * r + t] = v;
}
