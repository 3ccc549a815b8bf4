// A workgroup's sum of every thread's `v` (two at once), seen by all threads: a tree over 256
// threads in workgroup memory (layer_norm_rows.wgsl and layer_norm_backward.wgsl, a row each;
// the backward's column groups sum their lanes in `red` too).
var<workgroup> red: array<vec2<f32>, 256>;

fn row_sum(lid: u32, v: vec2<f32>) -> vec2<f32> {
  red[lid] = v;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (lid < s) { red[lid] += red[lid + s]; }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();  // red is reused by the next sum
  return r;
}
