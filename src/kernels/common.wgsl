// Shared by every kernel: the per-dispatch parameter block and the linear workgroup id.
// The host binds parameters as a uniform block of 256 u32 words (see gpu::Context::dispatch);
// uniform values keep control flow uniform around barriers.
@group(0) @binding({{META_BINDING}}) var<uniform> meta_u: array<vec4<u32>, 64>;

fn arg(i: u32) -> u32 { return meta_u[i >> 2u][i & 3u]; }
fn arg_f32(i: u32) -> f32 { return bitcast<f32>(arg(i)); }
fn arg_i32(i: u32) -> i32 { return bitcast<i32>(arg(i)); }

// Grids larger than the per-dimension limit are split over x, y and z by the host.
fn linear_group(wid: vec3<u32>, nwg: vec3<u32>) -> u32 { return wid.x + nwg.x * (wid.y + nwg.y * wid.z); }

// A well-mixed 32-bit hash (lowbias32, Chris Wellons): counter-based choices (negative samples,
// random starting neighbours) that do not depend on thread order.
fn hash(v: u32) -> u32 {
  var h = v;
  h ^= h >> 16u; h *= 0x7feb352du;
  h ^= h >> 15u; h *= 0x846ca68bu;
  h ^= h >> 16u;
  return h;
}
