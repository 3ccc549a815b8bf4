// Strided n-ary map over a broadcast shape: one thread per element of `shape`.
// Every operand (output first) has its own offset and strides in elements, so views
// (transposed, sliced, broadcast with stride 0) are read and written in place.
// Parameters: [n, rank, offset[NOPS], shape[8], strides[NOPS][8], params...]
// The host merges axes that are contiguous for every operand; when one axis remains it runs
// map_flat.wgsl instead.
// #include "map_common.wgsl"
{{BINDINGS}}
{{HELPERS}}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_group(wid, nwg) * 256u + lid;
  if (i >= arg(0u)) { return; }
  var idx: array<u32, NOPS>;
  for (var k = 0u; k < NOPS; k++) { idx[k] = arg(2u + k); }
  var rem = i;
  for (var d = i32(arg(1u)) - 1; d >= 0; d--) {
    let extent = arg(2u + NOPS + u32(d));
    let c = rem % extent;
    rem = rem / extent;
    for (var k = 0u; k < NOPS; k++) { idx[k] += c * arg(2u + NOPS + 8u + k * 8u + u32(d)); }
  }
  {{BODY}}
}
