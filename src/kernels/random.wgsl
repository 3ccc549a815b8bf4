// Counter-based random numbers: Philox-4x32-10 (Salmon et al., SC'11). Block b of four outputs
// is philox(counter = (b, 0, 0, 0), key = seed), so results depend only on (seed, index):
// the same on every device and for any workgroup size.
// Parameters: [n, seed_lo, seed_hi, a bits, b bits]; uniform: a + (b - a)·u, normal: a + b·z.
@group(0) @binding(0) var<storage, read_write> out: array<{{T}}>;

// 32×32 → 64-bit product as (hi, lo), from 16-bit halves (WGSL has no mulhi).
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
  let a_lo = a & 0xffffu; let a_hi = a >> 16u;
  let b_lo = b & 0xffffu; let b_hi = b >> 16u;
  let ll = a_lo * b_lo; let lh = a_lo * b_hi; let hl = a_hi * b_lo; let hh = a_hi * b_hi;
  let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
  let hi = hh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
  let lo = (mid << 16u) | (ll & 0xffffu);
  return vec2<u32>(hi, lo);
}

fn philox(counter: vec4<u32>, key_in: vec2<u32>) -> vec4<u32> {
  var c = counter;
  var k = key_in;
  for (var r = 0u; r < 10u; r++) {
    let p0 = mul_wide(0xD2511F53u, c.x);
    let p1 = mul_wide(0xCD9E8D57u, c.z);
    c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
    k = k + vec2<u32>(0x9E3779B9u, 0xBB67AE85u);
  }
  return c;
}

// 24 random bits → (0, 1), never 0 or 1 (safe for log).
fn to_unit(x: u32) -> f32 { return (f32(x >> 8u) + 0.5) * (1.0 / 16777216.0); }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let b = linear_group(wid, nwg) * 256u + lid;
  let n = arg(0u);
  if (b * 4u >= n) { return; }
  let r = philox(vec4<u32>(b, 0u, 0u, 0u), vec2<u32>(arg(1u), arg(2u)));
  let p = arg_f32(3u);
  let q = arg_f32(4u);
  var v: vec4<f32>;
  if ({{NORMAL}}) {
    // Box–Muller on (r.x, r.y) and (r.z, r.w).
    let r1 = sqrt(-2.0 * log(to_unit(r.x)));
    let r2 = sqrt(-2.0 * log(to_unit(r.z)));
    let t1 = 6.283185307179586 * to_unit(r.y);
    let t2 = 6.283185307179586 * to_unit(r.w);
    v = p + q * vec4<f32>(r1 * cos(t1), r1 * sin(t1), r2 * cos(t2), r2 * sin(t2));
  } else {
    v = p + (q - p) * vec4<f32>(to_unit(r.x), to_unit(r.y), to_unit(r.z), to_unit(r.w));
  }
  for (var k = 0u; k < 4u; k++) {
    if (b * 4u + k < n) { out[b * 4u + k] = {{T}}(v[k]); }
  }
}
