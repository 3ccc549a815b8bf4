// Radix-2 FFT of complex lines of length M (a power of two) held in workgroup memory: one
// workgroup per line, bit-reversed load, log2(M) radix-2 butterfly stages taken two at a time. Rows and columns of a 2-D
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

fn cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> { return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
fn twist(t: vec2<f32>, conj: f32) -> vec2<f32> { return vec2<f32>(t.x, conj * t.y); }

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
  var s = 0u;
  if ((LOG_M & 1u) == 1u) {  // an odd count: one radix-2 stage first
    for (var b = lid; b < M / 2u; b += {{WG}}u) {
      let u = buf[2u * b];
      let v = buf[2u * b + 1u];
      buf[2u * b] = u + v;
      buf[2u * b + 1u] = u - v;
    }
    workgroupBarrier();
    s = 1u;
  }
  // Two radix-2 stages (halves h and 2h) at a time: a thread takes the four values
  // i0, i0 + h, i0 + 2h, i0 + 3h through both, in registers — half the barriers and half the
  // workgroup-memory traffic of one stage at a time (barriers are dear on CPU adapters).
  for (; s < LOG_M; s += 2u) {
    let h = 1u << s;
    for (var b = lid; b < M / 4u; b += {{WG}}u) {
      let j = b & (h - 1u);
      let i0 = ((b >> s) << (s + 2u)) + j;
      let w1 = twist(twiddle[j << (LOG_M - 1u - s)], conj);
      let w2 = twist(twiddle[j << (LOG_M - 2u - s)], conj);
      let w3 = twist(twiddle[(j + h) << (LOG_M - 2u - s)], conj);
      let x0 = buf[i0];
      let x1 = cmul(w1, buf[i0 + h]);
      let x2 = buf[i0 + 2u * h];
      let x3 = cmul(w1, buf[i0 + 3u * h]);
      let y0 = x0 + x1;
      let y1 = x0 - x1;
      let y2 = cmul(w2, x2 + x3);
      let y3 = cmul(w3, x2 - x3);
      buf[i0] = y0 + y2;
      buf[i0 + 2u * h] = y0 - y2;
      buf[i0 + h] = y1 + y3;
      buf[i0 + 3u * h] = y1 - y3;
    }
    workgroupBarrier();
  }
  for (var e = lid; e < M; e += {{WG}}u) { data[base + e * stride] = buf[e]; }
}
