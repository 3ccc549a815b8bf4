// The one-axis case of map.wgsl (contiguous operands, or scalars broadcast with stride 0):
// element i of operand k is at offset[k] + i·stride[k]. Each thread handles PER_THREAD
// elements spaced a whole grid apart, so every load is coalesced and several are in flight per
// thread; no divisions. Same parameters and body as map.wgsl.
// #include "map_common.wgsl"
{{BINDINGS}}
const PER_THREAD: u32 = 4u;
{{HELPERS}}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = arg(0u);
  let threads = nwg.x * nwg.y * nwg.z * 256u;
  let first = linear_group(wid, nwg) * 256u + lid;
  var base: array<u32, NOPS>;
  var step: array<u32, NOPS>;
  for (var k = 0u; k < NOPS; k++) {
    base[k] = arg(2u + k);
    step[k] = arg(2u + NOPS + 8u + k * 8u);
  }
  for (var e = 0u; e < PER_THREAD; e++) {
    let i = first + e * threads;
    if (i >= n) { break; }
    var idx: array<u32, NOPS>;
    for (var k = 0u; k < NOPS; k++) { idx[k] = base[k] + i * step[k]; }
    {{BODY}}
  }
}
