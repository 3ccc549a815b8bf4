// FFTs of complex lines of length M, one workgroup per line, in place: the passes (PASSES) are
// generated on the host for this M (src/maps/fft_lines.cpp explains the plan). Rows and columns
// of 2-D arrays are both lines: element e of line l of array a sits at
//   first + a·array_stride + l·line_stride + e·elem_stride.
// Forward: exp(−2πi·nk/M); inverse: the conjugate, unscaled.
// Parameters: [lines per array, arrays, first, array_stride, line_stride, elem_stride, inverse]
@group(0) @binding(0) var<storage, read_write> data: array<vec2<f32>>;
@group(0) @binding(1) var<storage, read> twiddle: array<vec2<f32>>;  // [M] exp(−2πit/M)
const M: u32 = {{M}}u;
var<workgroup> buf: array<vec2<f32>, M>;

// cmul and quarter (src/kernels/fft_codegen.hpp)
{{COMPLEX}}// exp(dir·2πi·t/M) for dir = −1 (forward) or +1.
fn tw(t: u32, dir: f32) -> vec2<f32> { let w = twiddle[t]; return vec2<f32>(w.x, -dir * w.y); }

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let index = linear_group(wid, nwg);
  if (index >= arg(0u) * arg(1u)) { return; }
  let base = arg(2u) + (index / arg(0u)) * arg(3u) + (index % arg(0u)) * arg(4u);
  let stride = arg(5u);
  let dir = select(-1.0, 1.0, arg(6u) != 0u);
{{PASSES}}
}
