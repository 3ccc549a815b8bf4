// Row reduction of a contiguous [rows, R] block: out[r·G + g] = reduce(in[offset + r·R + j])
// over j in part g of G equal parts of the row (G > 1 splits long rows over several
// workgroups; the host reduces the G partials in a second pass).
// One workgroup of 256 threads per (row, part): strided accumulation, then a tree in
// workgroup memory. Accumulates in ACC (f32 for floats), so f16 sums keep their precision.
// Parameters: [rows, R, offset, G, chunk, scale bits]. INPUT declares `fn load(i) -> IN_T`: the
// input buffer read at element i, or (lazy mode, reduce.cpp) a fused elementwise tree evaluated
// at element i of the logical [rows, R] block.
@group(0) @binding(0) var<storage, read_write> out: array<{{OUT_T}}>;
{{INPUT}}
var<workgroup> partial: array<{{ACC_T}}, 256>;

fn combine(a: {{ACC_T}}, b: {{ACC_T}}) -> {{ACC_T}} { return {{COMBINE}}; }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let w = linear_group(wid, nwg);
  let rows = arg(0u);
  let len = arg(1u);
  let parts = arg(3u);
  let chunk = arg(4u);
  let row = w / parts;
  let part = w % parts;
  let valid = row < rows;  // no early return: every thread must reach the barriers
  let begin = part * chunk;
  let end = min(len, begin + chunk);
  let base = arg(2u) + row * len;
  var acc: {{ACC_T}} = {{IDENTITY}};
  if (valid) {
    for (var j = begin + lid; j < end; j += 256u) { acc = combine(acc, {{ACC_T}}(load(base + j))); }
  }
  partial[lid] = acc;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (lid < s) { partial[lid] = combine(partial[lid], partial[lid + s]); }
    workgroupBarrier();
  }
  if (valid && lid == 0u) { out[w] = {{OUT_T}}({{FINISH}}); }
}
