// One-axis elementwise map written as a pure function of the input values:
// out[i] = value_of(in0[i], in1[i], ...) with element i of operand k at offset[k] + i·stride[k]
// (stride 0 broadcasts a scalar). Each thread handles several elements a grid apart and loads
// all of them before storing any, so several independent loads per input are in flight.
// Parameters as map.wgsl: [n, rank = 1, offset[NOPS], shape[8], strides[NOPS][8], params...]
// #include "map_common.wgsl"
{{BINDINGS}}
{{HELPERS}}
fn value_of({{ARGS}}) -> {{OUT_T}} { return {{OUT_T}}({{EXPR}}); }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = arg(0u);
  let threads = nwg.x * nwg.y * nwg.z * 256u;
  let first = linear_group(wid, nwg) * 256u + lid;
{{LOADS}}
{{STORES}}}
