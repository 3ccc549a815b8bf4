// Column reduction of a contiguous [R, C] block over its leading axis (a bias gradient: sum over
// the batch) read in place, instead of transposing it into rows first: out[c] = reduce over r of
// load(offset + r·C + c). A workgroup takes 32 adjacent columns (adjacent threads read adjacent
// words) with 8 lanes each striding the rows, then combines the lanes in workgroup memory.
// Accumulates in ACC (f32 for floats). Same operators as reduce.wgsl.
// Parameters: [C, R, offset, unused, unused, scale bits]
@group(0) @binding(0) var<storage, read_write> out: array<{{OUT_T}}>;
{{INPUT}}
var<workgroup> lanes: array<{{ACC_T}}, 256>;

fn combine(a: {{ACC_T}}, b: {{ACC_T}}) -> {{ACC_T}} { return {{COMBINE}}; }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let cols = arg(0u);
  let len = arg(1u);
  let col = linear_group(wid, nwg) * 32u + lid % 32u;
  let lane = lid / 32u;
  var acc: {{ACC_T}} = {{IDENTITY}};
  if (col < cols) {  // no early return: every thread must reach the barriers
    for (var r = lane; r < len; r += 8u) { acc = combine(acc, {{ACC_T}}(load(arg(2u) + r * cols + col))); }
  }
  lanes[lid] = acc;
  workgroupBarrier();
  for (var s = 128u; s >= 32u; s >>= 1u) {
    if (lid < s) { lanes[lid] = combine(lanes[lid], lanes[lid + s]); }
    workgroupBarrier();
  }
  if (lid < 32u && col < cols) {
    let partial = array<{{ACC_T}}, 1>(lanes[lid]);
    out[col] = {{OUT_T}}({{FINISH}});
  }
}
