// The split-K matmul's last step (run_split_k in matmul.cpp): c[i] = Σ_s parts[s·n + i], the S
// partial products summed in slice order, straight into C. One read of the partials and one
// write of C, where a general sum over axis 0 moved the slice axis last (a copy of every
// partial), reduced, and then copied the result into C.
// Parameters: [n (elements of C), S]
@group(0) @binding(0) var<storage, read_write> c: array<f32>;
@group(0) @binding(1) var<storage, read> parts: array<f32>;  // [S, n]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = arg(0u);
  let i = linear_group(wid, nwg) * 256u + lid;
  if (i >= n) { return; }
  var total = 0.0;
  for (var s = 0u; s < arg(1u); s++) { total += parts[s * n + i]; }
  c[i] = total;
}
