// The points' checks in one pass over a block (input_scale.cpp): whether any value is NaN or
// infinite, the largest |x_ij| and the largest |x_ij − x_0j|, accumulated over the blocks in three
// words of `out`. Non-finite values are found by their bits (exponent all ones), which no
// compiler may fold away as it may a float test; the two maxima are kept as the bits of
// non-negative floats, whose order as u32s is the floats' (+inf above every finite value).
// Before, six tensor ops a block (abs, a scaled sum, two maxima, a difference and its abs: four
// temporaries of the block's size) and three readbacks.
// Parameters: [count, D]: the block's elements (rows × D, dense) and its row length.
@group(0) @binding(0) var<storage, read_write> out: array<atomic<u32>>;  // [3]: non-finite seen, max |x|, max |x − x_0|
@group(0) @binding(1) var<storage, read> x: array<f32>;                 // the block, [rows, D]
@group(0) @binding(2) var<storage, read> first: array<f32>;             // x_0, the set's first point, [D]

const T: u32 = 256u;
var<workgroup> seen: array<atomic<u32>, 3>;  // this workgroup's

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  // Zeroed here, not left to the implementation's zeroing of workgroup memory: wgpu-native on
  // lavapipe left garbage in these atomics (every set was refused as non-finite).
  if (lid < 3u) { atomicStore(&seen[lid], 0u); }
  workgroupBarrier();
  let count = arg(0u);
  let D = arg(1u);
  let stride = nwg.x * nwg.y * nwg.z * T;
  var bad = 0u;
  var big = 0u;
  var far = 0u;
  for (var i = linear_group(wid, nwg) * T + lid; i < count; i += stride) {
    let v = x[i];
    let b = bitcast<u32>(v);
    bad |= select(0u, 1u, (b & 0x7f800000u) == 0x7f800000u);
    big = max(big, b & 0x7fffffffu);
    far = max(far, bitcast<u32>(abs(v - first[i % D])));
  }
  atomicOr(&seen[0], bad);
  atomicMax(&seen[1], big);
  atomicMax(&seen[2], far);
  workgroupBarrier();
  if (lid == 0u) {
    atomicOr(&out[0], atomicLoad(&seen[0]));
    atomicMax(&out[1], atomicLoad(&seen[1]));
    atomicMax(&out[2], atomicLoad(&seen[2]));
  }
}
