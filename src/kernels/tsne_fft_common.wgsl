// Shared by the FFT repulsion's spreading and interpolation: the 4×4 grid stencil of a point.
struct Stencil {
  cell: vec2<u32>,  // the stencil covers nodes cell − 1 … cell + 2 on each axis
  wx: vec4<f32>,
  wy: vec4<f32>,
}

// Lagrange basis on nodes −1, 0, 1, 2 at offset t ∈ [0, 1).
fn cubic_weights(t: f32) -> vec4<f32> {
  return vec4<f32>(-t * (t - 1.0) * (t - 2.0) / 6.0, (t + 1.0) * (t - 1.0) * (t - 2.0) / 2.0,
                   -(t + 1.0) * t * (t - 2.0) / 2.0, (t + 1.0) * t * (t - 1.0) / 6.0);
}

// p in centred coordinates; frame as tsne_fft_frame.wgsl writes it; g nodes per side.
fn stencil(p: vec2<f32>, frame0: vec2<f32>, h: f32, g: u32) -> Stencil {
  let u = (p - frame0) / h;
  let cell = min(vec2<u32>(max(floor(u), vec2<f32>(1.0))), vec2<u32>(g - 3u));
  return Stencil(cell, cubic_weights(u.x - f32(cell.x)), cubic_weights(u.y - f32(cell.y)));
}

// The spread's 64-bit fixed-point sums (tsne_fft_spread.wgsl, tsne_fft_spread_sorted.wgsl): the
// two's-complement words (lo, hi) of v, an integer-valued f32 with |v| < 2^62, exactly. |v| is
// split first (|v| − ⌊|v| / 2^32⌋·2^32 is exact and in [0, 2^32)), then negated across the pair:
// splitting v itself put a small negative v at 2^32 − |v|, which f32 rounds (to 2^32 for |v| < 128,
// a u32 conversion out of range).
fn split64(v: f32) -> vec2<u32> {
  let a = abs(v);
  let ha = floor(a * 2.3283064365386963e-10);  // ⌊|v| / 2^32⌋ < 2^30
  let la = u32(a - ha * 4294967296.0);
  let nlo = ~la + 1u;
  let neg = v < 0.0;
  return vec2<u32>(select(la, nlo, neg), select(u32(ha), ~u32(ha) + select(0u, 1u, nlo == 0u), neg));
}

// e / m for the FFT's line lengths m = 2^a or 3·2^a (FftLines::supported_length): a shift, then
// a division by the literal 3 (a multiply-high), the same integer as e / m. A division by a
// runtime divisor has no SIMD instruction on CPUs: lavapipe did it one lane at a time for each
// of the grid's M² elements in the multiply and charges kernels.
fn div_line(e: u32, m: u32) -> u32 {
  let tz = countTrailingZeros(m);
  let q = e >> tz;
  return select(q, q / 3u, (m >> tz) == 3u);
}
