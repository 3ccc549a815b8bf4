// Softmax over the last axis of dense [rows, C] f32, forward or backward in one kernel (issue
// 36): a workgroup a row, its threads striding the row; each row reduction (max, then the sum
// of exponentials; or Σ g·y for the backward) is a tree in workgroup memory.
//   BACKWARD = false: out = exp(a − max a) / Σ exp(a − max a)          (a: the input x)
//   BACKWARD = true:  out = y · (g − Σ g·y)                           (a: y, b: g)
// Parameters: [rows, C]
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
var<workgroup> red: array<f32, 256>;

// The workgroup's sum (max when `is_max`) of every thread's `v`, seen by all threads.
fn row_reduce(lid: u32, v: f32, is_max: bool) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (lid < s) { red[lid] = select(red[lid] + red[lid + s], max(red[lid], red[lid + s]), is_max); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();  // red is reused by the next reduction
  return r;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = linear_group(wid, nwg);
  if (row >= arg(0u)) { return; }  // uniform per workgroup: the barriers stay uniform
  let c = arg(1u);
  let base = row * c;
  if ({{BACKWARD}}) {
    var d = 0.0;
    for (var j = lid; j < c; j += 256u) { d += a[base + j] * b[base + j]; }
    d = row_reduce(lid, d, false);
    for (var j = lid; j < c; j += 256u) { out[base + j] = a[base + j] * (b[base + j] - d); }
  } else {
    var m = -0x1.fffffep+127f;
    for (var j = lid; j < c; j += 256u) { m = max(m, a[base + j]); }
    m = row_reduce(lid, m, true);
    var s = 0.0;
    for (var j = lid; j < c; j += 256u) { s += exp(a[base + j] - m); }
    s = row_reduce(lid, s, false);
    for (var j = lid; j < c; j += 256u) { out[base + j] = exp(a[base + j] - m) / s; }
  }
}
