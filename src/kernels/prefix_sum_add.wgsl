// The second half of prefix_sum_blocks.wgsl: block b's words get the exclusive sum of the blocks
// before it (sums[b], already scanned).
// Parameters: [words]
@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@group(0) @binding(1) var<storage, read> sums: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let block = linear_group(wid, nwg);
  if (block * 1024u >= arg(0u)) { return; }  // an overhanging workgroup (prefix_sum_blocks.wgsl)
  let offset = sums[block];
  for (var e = 0u; e < 4u; e++) {
    let i = block * 1024u + e * 256u + lid;  // coalesced: 256 consecutive words at a time
    if (i < arg(0u)) { data[i] += offset; }
  }
}
