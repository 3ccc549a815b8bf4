// Layer norm's backward in one dispatch (nn::LayerNorm, issue 36): the input's gradient and the
// weight's and bias's, over dense [rows, C] f32 with the forward's stats (μ, r per row). One grid
// of two kinds of workgroups that never wait for each other (each reads x, w, g and the stats and
// writes outputs of its own):
//   groups [0, rows): a row each, its threads striding the row, two row sums in workgroup memory:
//     dx = r·(w·g − mean(w·g) − x̂·mean(w·g·x̂)), x̂ = (x − μ)·r;
//   groups [rows, rows + ⌈C/32⌉): 32 adjacent columns each, 8 lanes a column striding the rows
//     (as reduce_columns.wgsl), the lanes summed in workgroup memory: dw = Σ g·x̂, db = Σ g.
// The same arithmetic, in the same order, as the two dispatches it replaces (the forward's rows
// kernel run backward, then a column pass). Parameters: [rows, C]
@group(0) @binding(0) var<storage, read_write> dx: array<f32>;
@group(0) @binding(1) var<storage, read_write> dw: array<f32>;
@group(0) @binding(2) var<storage, read_write> db: array<f32>;
@group(0) @binding(3) var<storage, read> x: array<f32>;
@group(0) @binding(4) var<storage, read> w: array<f32>;
@group(0) @binding(5) var<storage, read> g: array<f32>;
@group(0) @binding(6) var<storage, read> stats: array<f32>;
// #include "row_sum.wgsl"

fn input_gradient(row: u32, c: u32, lid: u32) {
  let inv_c = 1.0 / f32(c);
  let base = row * c;
  let mu = stats[2u * row];
  let r = stats[2u * row + 1u];
  var s = vec2<f32>(0.0);
  for (var j = lid; j < c; j += 256u) {
    let gx = w[j] * g[base + j];
    s += vec2<f32>(gx, gx * ((x[base + j] - mu) * r));
  }
  s = row_sum(lid, s) * inv_c;
  for (var j = lid; j < c; j += 256u) {
    let gx = w[j] * g[base + j];
    dx[base + j] = r * (gx - s.x - (x[base + j] - mu) * r * s.y);
  }
}

fn parameter_gradients(block: u32, rows: u32, c: u32, lid: u32) {
  let col = block * 32u + lid % 32u;
  var acc = vec2<f32>(0.0);
  if (col < c) {  // no early return: every thread must reach the barriers
    for (var r = lid / 32u; r < rows; r += 8u) {
      let gv = g[r * c + col];
      acc += vec2<f32>(gv * ((x[r * c + col] - stats[2u * r]) * stats[2u * r + 1u]), gv);
    }
  }
  red[lid] = acc;
  workgroupBarrier();
  for (var s = 128u; s >= 32u; s >>= 1u) {
    if (lid < s) { red[lid] += red[lid + s]; }
    workgroupBarrier();
  }
  if (lid < 32u && col < c) {
    dw[col] = red[lid].x;
    db[col] = red[lid].y;
  }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let rows = arg(0u);
  let c = arg(1u);
  let group = linear_group(wid, nwg);  // uniform per workgroup: the barriers stay uniform
  if (group < rows) {
    input_gradient(group, c, lid);
  } else if ((group - rows) * 32u < c) {
    parameter_gradients(group - rows, rows, c, lid);
  }
}
