// Row reduction for short rows (R ≤ 64): one thread per row, so millions of short rows keep
// every lane busy. Same parameters and operators as reduce.wgsl (G is always 1 here).
@group(0) @binding(0) var<storage, read_write> out: array<{{OUT_T}}>;
{{INPUT}}

fn combine(a: {{ACC_T}}, b: {{ACC_T}}) -> {{ACC_T}} { return {{COMBINE}}; }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = linear_group(wid, nwg) * 256u + lid;
  if (row >= arg(0u)) { return; }
  let len = arg(1u);
  let base = arg(2u) + row * len;
  var acc: {{ACC_T}} = {{IDENTITY}};
  for (var j = 0u; j < len; j++) { acc = combine(acc, {{ACC_T}}(load(base + j))); }
  let partial = array<{{ACC_T}}, 1>(acc);
  out[row] = {{OUT_T}}({{FINISH}});
}
