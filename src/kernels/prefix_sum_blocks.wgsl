// Exclusive prefix sums of u32 words, in place, a block of 1,024 words a workgroup
// (prefix_sum.cpp): each workgroup replaces its block by the block's own exclusive sums and
// writes the block's total to sums[block]. Those totals are scanned the same way on the GPU (one
// level more for every 1,024× more words; prefix_sum.cpp records the levels), and
// prefix_sum_add.wgsl adds each block's offset back.
// Sums wrap modulo 2^32, as u32 addition does.
// Parameters: [words]
@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@group(0) @binding(1) var<storage, read_write> sums: array<u32>;  // [⌈words / 1024⌉]

var<workgroup> part: array<u32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = arg(0u);
  let block = linear_group(wid, nwg);
  // A grid past 65,535 workgroups a side overhangs the blocks: those workgroups (whole, so before
  // any barrier) write nothing, not even a total past the end of `sums`.
  if (block * 1024u >= n) { return; }
  // Four consecutive words a thread: its own sum, then the 256 sums scanned together.
  let base = block * 1024u + lid * 4u;
  var v = vec4<u32>(0u);
  for (var e = 0u; e < 4u; e++) {
    if (base + e < n) { v[e] = data[base + e]; }
  }
  let own = v.x + v.y + v.z + v.w;
  part[lid] = own;
  workgroupBarrier();
  for (var d = 1u; d < 256u; d <<= 1u) {
    var add = 0u;
    if (lid >= d) { add = part[lid - d]; }
    workgroupBarrier();
    part[lid] += add;
    workgroupBarrier();
  }
  var run = part[lid] - own;  // the words before this thread's four, within the block
  for (var e = 0u; e < 4u; e++) {
    if (base + e < n) { data[base + e] = run; }
    run += v[e];
  }
  if (lid == 255u) { sums[block] = part[255]; }
}
