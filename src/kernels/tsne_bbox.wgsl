// The bounding box of positions [N, 2] in one workgroup: each of 64 threads takes points lid,
// lid + 64, …, then thread 0 combines the 64 (one barrier: lavapipe runs a workgroup on one
// core, and each barrier switches between its batches of 8 threads: a 256-thread tree took twice
// as long). Used on CPU adapters, where this one dispatch costs less than y.min/y.max's four (two
// strided copies and two reductions: ~12 ms an iteration at 10,000 points on lavapipe, loaded;
// this 1.6 ms). min and max are exact, so the box is bitwise theirs.
// Parameters: [N]
@group(0) @binding(0) var<storage, read_write> lo: array<f32>;  // [2] per-axis minimum
@group(0) @binding(1) var<storage, read_write> hi: array<f32>;  // [2] per-axis maximum
@group(0) @binding(2) var<storage, read> y: array<vec2<f32>>;   // [N]
var<workgroup> lo_s: array<vec2<f32>, 64>;
var<workgroup> hi_s: array<vec2<f32>, 64>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32) {
  let n = arg(0u);
  var a = y[min(lid, n - 1u)];
  var b = a;
  for (var i = lid + 64u; i < n; i += 64u) {
    let p = y[i];
    a = min(a, p);
    b = max(b, p);
  }
  lo_s[lid] = a;
  hi_s[lid] = b;
  workgroupBarrier();
  if (lid == 0u) {
    for (var t = 1u; t < 64u; t++) {
      a = min(a, lo_s[t]);
      b = max(b, hi_s[t]);
    }
    lo[0] = a.x;
    lo[1] = a.y;
    hi[0] = b.x;
    hi[1] = b.y;
  }
}
