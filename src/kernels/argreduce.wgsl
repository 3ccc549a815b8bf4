// Arg-reduction of a contiguous [rows, R] block: out[r] = the first j where in[r, j] is the
// maximum (or minimum). Ties go to the lowest index, as in numpy and PyTorch.
// Parameters: [rows, R, offset]
@group(0) @binding(0) var<storage, read_write> out: array<i32>;
@group(0) @binding(1) var<storage, read> inp: array<{{IN_T}}>;
var<workgroup> best_value: array<f32, 256>;
var<workgroup> best_index: array<u32, 256>;

// Is (v, i) better than (w, j)?
fn better(v: f32, i: u32, w: f32, j: u32) -> bool {
  return v {{CMP}} w || (v == w && i < j);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = linear_group(wid, nwg);
  let valid = row < arg(0u);
  let len = arg(1u);
  let base = arg(2u) + row * len;
  var v = {{WORST}};
  var at = 0xffffffffu;
  if (valid) {
    for (var j = lid; j < len; j += 256u) {
      let x = f32(inp[base + j]);
      if (better(x, j, v, at)) { v = x; at = j; }
    }
  }
  best_value[lid] = v;
  best_index[lid] = at;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (lid < s && better(best_value[lid + s], best_index[lid + s], best_value[lid], best_index[lid])) {
      best_value[lid] = best_value[lid + s];
      best_index[lid] = best_index[lid + s];
    }
    workgroupBarrier();
  }
  if (valid && lid == 0u) { out[row] = i32(best_index[0]); }
}
