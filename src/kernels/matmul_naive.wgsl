// Rung 1: one thread per workgroup, one output per thread. Every thread reads a whole row of A
// and column of B from memory; nothing is shared.
@group(0) @binding(0) var<storage, read_write> c: array<{{T}}>;
@group(0) @binding(1) var<storage, read> a: array<{{T}}>;
@group(0) @binding(2) var<storage, read> b: array<{{T}}>;

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let M = mm_m(); let N = mm_n(); let K = mm_k();
  // Rung 2 runs the same code with 256 threads per workgroup.
  let i = linear_group(wid, nwg) * {{WG}}u + lid;
  let batch = i / (M * N);
  if (batch >= arg(5u)) { return; }
  let r = (i % (M * N)) / N;
  let col = i % N;
  let bases = mm_batch_bases(batch);
  var acc = 0.0;
  for (var k = 0u; k < K; k++) {
    acc += f32(a[bases.x + r * arg(6u) + k * arg(7u)]) * f32(b[bases.y + k * arg(8u) + col * arg(9u)]);
  }
  c[arg(12u) + i] = {{T}}(acc);
}
