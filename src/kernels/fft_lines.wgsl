// Radix-2 FFT of complex lines of length M (a power of two) held in workgroup memory: one
// workgroup per line, bit-reversed load, log2(M) butterfly stages. Rows and columns of a 2-D
// array are both lines: element e of line l of array a sits at
//   first + a·array_stride + l·line_stride + e·elem_stride.
// Twiddles exp(−2πik/M), k < M/2, come from the host in double precision; the inverse uses their
// conjugates and does not scale.
// Parameters: [lines per array, arrays, first, array_stride, line_stride, elem_stride, inverse]
@group(0) @binding(0) var<storage, read_write> data: array<vec2<f32>>;
@group(0) @binding(1) var<storage, read> twiddle: array<vec2<f32>>;  // [M / 2]
const M: u32 = {{M}}u;
const LOG_M: u32 = {{LOG_M}}u;
var<workgroup> buf: array<vec2<f32>, M>;

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let index = linear_group(wid, nwg);
  if (index >= arg(0u) * arg(1u)) { return; }
  let base = arg(2u) + (index / arg(0u)) * arg(3u) + (index % arg(0u)) * arg(4u);
  let stride = arg(5u);
  let conj = select(1.0, -1.0, arg(6u) != 0u);
  for (var e = lid; e < M; e += {{WG}}u) {
    buf[reverseBits(e) >> (32u - LOG_M)] = data[base + e * stride];
  }
  workgroupBarrier();
  for (var s = 0u; s < LOG_M; s++) {
    let half = 1u << s;
    for (var b = lid; b < M / 2u; b += {{WG}}u) {
      let j = b & (half - 1u);
      let i0 = ((b >> s) << (s + 1u)) + j;
      let tw = twiddle[j << (LOG_M - 1u - s)];
      let w = vec2<f32>(tw.x, conj * tw.y);
      let v = buf[i0 + half];
      let t = vec2<f32>(w.x * v.x - w.y * v.y, w.x * v.y + w.y * v.x);
      let u = buf[i0];
      buf[i0] = u + t;
      buf[i0 + half] = u - t;
    }
    workgroupBarrier();
  }
  for (var e = lid; e < M; e += {{WG}}u) { data[base + e * stride] = buf[e]; }
}
