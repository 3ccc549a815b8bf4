// The last step of ordering points by cell (tsne_cell_order.cpp): point i goes to its cell's
// first slot (the exclusive sums of the cells' counts) plus its rank within the cell.
// Parameters: [N]
@group(0) @binding(0) var<storage, read_write> order: array<u32>;  // [N]: points, cell by cell
@group(0) @binding(1) var<storage, read> cell_rank: array<u32>;    // [N, 2] (tsne_fft_bin.wgsl)
@group(0) @binding(2) var<storage, read> first: array<u32>;        // [G·G]: each cell's first slot

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_group(wid, nwg) * 256u + lid;
  if (i >= arg(0u)) { return; }
  order[first[cell_rank[2u * i]] + cell_rank[2u * i + 1u]] = i;
}
