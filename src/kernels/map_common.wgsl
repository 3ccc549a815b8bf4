// Shared by the map kernels (map.wgsl, map_flat.wgsl, map_values.wgsl): the op's scalar
// parameters follow the operand layout [n, rank, offset[NOPS], shape[8], strides[NOPS][8]]. The
// kernel declares NOPS, its operand count.
const PARAMS: u32 = 2u + NOPS + 8u + NOPS * 8u;
fn param_f32(k: u32) -> f32 { return arg_f32(PARAMS + k); }
fn param_i32(k: u32) -> i32 { return arg_i32(PARAMS + k); }
fn param_u32(k: u32) -> u32 { return arg(PARAMS + k); }
