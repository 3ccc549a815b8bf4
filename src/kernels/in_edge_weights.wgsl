// The in-edges' weights in the incoming-edge order (t-SNE's attraction reads them beside the
// edge ids, in consecutive words): w_in[j] = w[edges[j]]. The weights [N, K] may be row blocks
// (list_blocks.hpp); one dispatch takes one block of weights against one block of edge ids and
// fills the ids that fall in its rows (so every pair of blocks runs once, without binding all).
// Parameters: [ids in this edge block, first edge id of the weight block, its edge count].
@group(0) @binding(0) var<storage, read> edges: array<i32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> w_in: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let j = linear_group(wid, nwg) * 256u + lid;
  if (j >= arg(0u)) { return; }
  let e = u32(edges[j]) - arg(1u);  // wraps past the block's ids below it
  if (e < arg(2u)) { w_in[j] = w[e]; }
}
