// tsne_fft_spread.wgsl's 64-bit spread with the points visited cell by cell (`order`,
// tsne_cell_order.cpp), on GPUs with subgroups. Points of one cell share all 16 stencil nodes,
// so consecutive lanes holding such points first add their contributions together (a
// segmented sum across the subgroup) and only the last lane of each run makes the atomic adds,
// where every point made its own before: on dense cells those same-address atomics queue behind
// each other. The contributions are the same 64-bit fixed-point integers, summed modulo 2^64 as
// the atomics sum them: the grid is the plain kernel's to the bit, in any order (a stale order
// only makes the runs shorter).
// Parameters: [N, G]
// #include "tsne_fft_common.wgsl"
@group(0) @binding(0) var<storage, read_write> acc: array<atomic<u32>>;  // [G, G, 2] (lo, hi)
@group(0) @binding(1) var<storage, read> y: array<vec2<f32>>;            // [N]
@group(0) @binding(2) var<storage, read> frame: array<f32>;
@group(0) @binding(3) var<storage, read> order: array<u32>;              // [N]: a permutation

const NO_CELL: u32 = 0xffffffffu;

// One stencil row's four contributions (split64's words, tsne_fft_common.wgsl) as lo in two
// 16-bit halves and hi: the halves of up to 128 lanes sum without overflow, so the carry into hi
// is exact. Four rows in four structs of vectors, not arrays: indexed only by name, they stay in
// registers (an array indexed in a loop may be put in local memory).
struct Parts {
  lo0: vec4<u32>,
  lo1: vec4<u32>,
  hi: vec4<u32>,
}

fn split(v: vec4<f32>) -> Parts {
  let a = split64(v.x);
  let b = split64(v.y);
  let c = split64(v.z);
  let d = split64(v.w);
  let lo = vec4<u32>(a.x, b.x, c.x, d.x);
  return Parts(lo & vec4<u32>(0xffffu), lo >> vec4<u32>(16u), vec4<u32>(a.y, b.y, c.y, d.y));
}

// The lane d below's parts added where `take` (called by every lane: the shuffles need them all).
fn add_from(p: Parts, d: u32, take: bool) -> Parts {
  let o = Parts(subgroupShuffleUp(p.lo0, d), subgroupShuffleUp(p.lo1, d), subgroupShuffleUp(p.hi, d));
  if (!take) { return p; }
  return Parts(p.lo0 + o.lo0, p.lo1 + o.lo1, p.hi + o.hi);
}

// A run's total for the stencil row's four nodes from `first` on, added to the grid's 64-bit sums.
fn add_row(first: u32, p: Parts) {
  let low = p.lo0 + (p.lo1 << vec4<u32>(16u));                           // the sums modulo 2^32
  let carry = (p.lo1 + (p.lo0 >> vec4<u32>(16u))) >> vec4<u32>(16u);     // and their carries
  for (var b = 0u; b < 4u; b++) {
    let node = first + b;
    let old = atomicAdd(&acc[2u * node], low[b]);
    let high = p.hi[b] + carry[b] + select(0u, 1u, old + low[b] < old);
    if (high != 0u) { atomicAdd(&acc[2u * node + 1u], high); }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32, @builtin(subgroup_invocation_id) lane: u32,
        @builtin(subgroup_size) width: u32) {
  let t = linear_group(wid, nwg) * 256u + lid;
  let g = arg(1u);
  // No early return: every lane takes part in the shuffles (a lane past N holds no cell).
  var cell = NO_CELL;
  var r0 = Parts(vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u));
  var r1 = r0;
  var r2 = r0;
  var r3 = r0;
  if (t < arg(0u)) {
    let st = stencil(y[order[t]] - vec2<f32>(frame[3], frame[4]), vec2<f32>(frame[0], frame[1]), frame[2], g);
    cell = st.cell.y * g + st.cell.x;
    // In the plain kernel's order of operations, (scale · wy) · wx: the same f32 values.
    r0 = split(round(frame[5] * st.wy[0] * st.wx));
    r1 = split(round(frame[5] * st.wy[1] * st.wx));
    r2 = split(round(frame[5] * st.wy[2] * st.wx));
    r3 = split(round(frame[5] * st.wy[3] * st.wx));
  }
  // Inclusive sums over runs: lanes in a row with one cell (a sorted order makes each cell's
  // points one run, but any order is summed right: the same cell further on is another run).
  // First each lane's run start (a running maximum of the lanes where the cell changes), then
  // sums by doubling: after the step of distance d a lane holds up to 2d lanes of its run. The
  // steps run to the largest subgroup size (128) with no branch on anything the uniformity
  // analysis could call varying: a delta past the subgroup's width gives an undefined value,
  // which `take` (false there) ignores.
  let up = subgroupShuffleUp(cell, 1u);
  var start = select(0u, lane, lane > 0u && up != cell);
  for (var d = 1u; d < 128u; d <<= 1u) {
    let before = subgroupShuffleUp(start, d);
    if (lane >= d) { start = max(start, before); }
  }
  for (var d = 1u; d < 128u; d <<= 1u) {
    let take = lane >= d && lane - d >= start;
    r0 = add_from(r0, d, take);
    r1 = add_from(r1, d, take);
    r2 = add_from(r2, d, take);
    r3 = add_from(r3, d, take);
  }
  let next = subgroupShuffleDown(cell, 1u);
  if (cell == NO_CELL || (lane + 1u < width && next == cell)) { return; }  // not the run's last lane
  // The stencil's nodes: rows cy − 1 … cy + 2, columns cx − 1 … cx + 2.
  let first = (cell / g - 1u) * g + cell % g - 1u;
  add_row(first, r0);
  add_row(first + g, r1);
  add_row(first + 2u * g, r2);
  add_row(first + 3u * g, r3);
}
