// The first step of ordering points by their cell of the FFT grid (tsne_cell_order.cpp): each
// point's cell under this iteration's frame (the cell its spread stencil starts from), and its
// rank among the points counted into that cell so far (a counting sort's slot; the ranks within
// a cell depend on the threads' timing, which only permutes points of one cell).
// Parameters: [N, G]
// #include "tsne_fft_common.wgsl"
@group(0) @binding(0) var<storage, read_write> count: array<atomic<u32>>;  // [G·G], zero before
@group(0) @binding(1) var<storage, read_write> cell_rank: array<u32>;     // [N, 2]: (cell, rank)
@group(0) @binding(2) var<storage, read> y: array<vec2<f32>>;             // [N]
@group(0) @binding(3) var<storage, read> frame: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_group(wid, nwg) * 256u + lid;
  let g = arg(1u);
  if (i >= arg(0u)) { return; }
  let st = stencil(y[i] - vec2<f32>(frame[3], frame[4]), vec2<f32>(frame[0], frame[1]), frame[2], g);
  let cell = st.cell.y * g + st.cell.x;
  cell_rank[2u * i] = cell;
  cell_rank[2u * i + 1u] = atomicAdd(&count[cell], 1u);
}
