// The kNN graph's incoming edges on the GPU (incoming_edges_gpu in graph_gpu.cpp), in three
// steps of one counting sort by target, and the same list the host's incoming_edges builds:
//   step 0, one thread an edge: count[t] += 1 for the edge's target t (empty slots, −1, skipped);
//   (the host turns the counts into offsets: N words down, N + 1 up)
//   step 1, one thread an edge: the edge's id into the first free slot of its target's segment
//           of `scratch` (atomic cursors: the order inside a segment depends on thread timing);
//   step 2, a workgroup a target: its segment in increasing edge id, each id's place counted as
//           the ids in the segment below it (ids are distinct), into `edges`.
// Step 2 makes the list the same on every run, so the sums that gather over it are too.
// Lists past one binding come in row blocks and the ids go to blocks of whole targets: steps 0
// and 1 run once a list block (its edges' ids start at edge_base), steps 1 and 2 once a block of
// targets [t0, t1), whose ids fill positions from e0 (scratch and edges hold those positions).
// Parameters: [edges in this list block, edge_base, t0, t1, e0, step]. The step is a parameter,
// not a constant: one pipeline for the three (fewer to compile in a cold start, issue 35).
// Steps 0 and 1 are one loop; a branch on a parameter costs nothing measurable here.
@group(0) @binding(0) var<storage, read> neighbours: array<i32>;  // this block's [rows, k]
@group(0) @binding(1) var<storage, read_write> counter: array<atomic<u32>>;  // [N]
@group(0) @binding(2) var<storage, read> offsets: array<i32>;  // [N + 1]
@group(0) @binding(3) var<storage, read_write> scratch: array<i32>;  // positions [e0, …) of the targets' block
@group(0) @binding(4) var<storage, read_write> edges: array<i32>;    // the same positions, ordered

const THREADS: u32 = 64u;

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let t0 = arg(2u);
  let t1 = arg(3u);
  let e0 = arg(4u);
  let step = arg(5u);
  let group = linear_group(wid, nwg);
  if (step == 0u || step == 1u) {
    let e = group * THREADS + lid;
    if (e >= arg(0u)) { return; }
    let t = neighbours[e];
    if (t < 0) { return; }
    if (step == 1u && (u32(t) < t0 || u32(t) >= t1)) { return; }
    let slot = atomicAdd(&counter[u32(t)], 1u);
    if (step == 1u) { scratch[u32(offsets[t]) - e0 + slot] = i32(arg(1u) + e); }
    return;
  }
  let t = t0 + group;
  if (t >= t1) { return; }
  let lo = u32(offsets[t]) - e0;
  let hi = u32(offsets[t + 1u]) - e0;
  for (var i = lo + lid; i < hi; i += THREADS) {
    let id = scratch[i];
    var place = 0u;
    for (var j = lo; j < hi; j++) { place += select(0u, 1u, scratch[j] < id); }
    edges[lo + place] = id;
  }
}
