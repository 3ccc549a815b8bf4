// Layer norm's parameter gradients in one kernel (nn::LayerNorm, issue 36): over the rows of
// dense [rows, C] f32, dw[c] = Σ g·x̂ and db[c] = Σ g with x̂ = (x − μ)·r from the forward's
// stats. A workgroup takes 32 adjacent columns with 8 lanes each striding the rows (as
// reduce_columns.wgsl), then sums the lanes in workgroup memory.
// Parameters: [rows, C]
@group(0) @binding(0) var<storage, read_write> dw: array<f32>;
@group(0) @binding(1) var<storage, read_write> db: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> g: array<f32>;
@group(0) @binding(4) var<storage, read> stats: array<f32>;
var<workgroup> lanes: array<vec2<f32>, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let rows = arg(0u);
  let c = arg(1u);
  let col = linear_group(wid, nwg) * 32u + lid % 32u;
  var acc = vec2<f32>(0.0);
  if (col < c) {  // no early return: every thread must reach the barriers
    for (var r = lid / 32u; r < rows; r += 8u) {
      let gv = g[r * c + col];
      acc += vec2<f32>(gv * ((x[r * c + col] - stats[2u * r]) * stats[2u * r + 1u]), gv);
    }
  }
  lanes[lid] = acc;
  workgroupBarrier();
  for (var s = 128u; s >= 32u; s >>= 1u) {
    if (lid < s) { lanes[lid] += lanes[lid + s]; }
    workgroupBarrier();
  }
  if (lid < 32u && col < c) {
    dw[col] = lanes[lid].x;
    db[col] = lanes[lid].y;
  }
}
