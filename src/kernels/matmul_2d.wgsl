// Rung 3: 16×16 workgroups over a 2-D grid of outputs. With x along columns, the 16 threads of
// a row read consecutive B elements (coalesced) and share one A element; with x along rows they
// read 16 B columns' elements far apart: same arithmetic, different memory traffic.
@group(0) @binding(0) var<storage, read_write> c: array<{{T}}>;
@group(0) @binding(1) var<storage, read> a: array<{{T}}>;
@group(0) @binding(2) var<storage, read> b: array<{{T}}>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let M = mm_m(); let N = mm_n(); let K = mm_k();
  let tile = mm_locate(linear_group(wid, nwg));
  if (!tile.valid) { return; }
  let batch = tile.batch;
  let r = tile.row * 16u + {{ROW_LANE}};
  let col = tile.col * 16u + {{COL_LANE}};
  if (r >= M || col >= N) { return; }
  let bases = mm_batch_bases(batch);
  var acc = 0.0;
  for (var k = 0u; k < K; k++) {
    acc += f32(a[bases.x + r * arg(6u) + k * arg(7u)]) * f32(b[bases.y + k * arg(8u) + col * arg(9u)]);
  }
  c[arg(12u) + batch * M * N + r * N + col] = {{T}}(acc);
}
