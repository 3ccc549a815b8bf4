// out[offset + i] = start + i * step, for a contiguous output (full, arange).
// Parameters: [n, offset, start bits, step bits]
@group(0) @binding(0) var<storage, read_write> out: array<{{T}}>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_group(wid, nwg) * 256u + lid;
  if (i >= arg(0u)) { return; }
  out[arg(1u) + i] = {{VALUE}};
}
