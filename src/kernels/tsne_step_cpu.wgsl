// One t-SNE iteration's attraction and update in one dispatch, for CPU adapters (tsne.cpp): the
// attraction over the symmetric graph (tsne_symmetric.hpp: each neighbour once, with the
// summed weight of both directions), then the step of tsne_update.wgsl on the same point.
// Reads positions y and writes y_out (tsne.cpp swaps the two each iteration): the other points'
// positions must not move while this dispatch reads them.
// attract_i = Σ_j w_ij·q_ij·(y_i − y_j), q = 1 / (1 + |y_i − y_j|²);
// grad_i = 4·(exaggeration·attract_i − repulse_i / Z); gains and momentum as tsne_update.wgsl.
// One thread a point, in the slots' order (heaviest rows first, attraction_order.hpp): eight
// threads share a core's SIMD lanes and wait for the longest row among them.
// Workgroups of 64 (not 256): 1,797 points (digits) are 29 of them, which lavapipe's two cores
// share evenly (8 of 256 were 7 full ones and a sliver: 4 against 3).
// Parameters: [N, lr, momentum, exaggeration, max_step]
@group(0) @binding(0) var<storage, read_write> y_out: array<vec2<f32>>;  // [N]
@group(0) @binding(1) var<storage, read_write> state: array<vec4<f32>>;  // [N] (update.xy, gains.xy)
@group(0) @binding(2) var<storage, read> y: array<vec2<f32>>;            // [N]
@group(0) @binding(3) var<storage, read> offsets: array<i32>;            // [N + 1]
@group(0) @binding(4) var<storage, read> edges: array<vec2<u32>>;        // (neighbour, weight bits)
@group(0) @binding(5) var<storage, read> order: array<u32>;              // [N]: the point a slot takes
@group(0) @binding(6) var<storage, read> repulse: array<vec4<f32>>;      // [N] (fx, fy, Σq, 0)
@group(0) @binding(7) var<storage, read> z: array<f32>;                  // [1]

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let slot = linear_group(wid, nwg) * 64u + lid;
  if (slot >= arg(0u)) { return; }
  let i = order[slot];
  let yi = y[i];
  var f = vec2<f32>(0.0);
  // Two edges at a time with one division: w0/a0 = w0·a1/(a0·a1), w1/a1 = w1·a0/(a0·a1) (a CPU
  // divides 8 floats in about the time the rest of an edge's arithmetic takes; a0·a1 overflows
  // only for points ~1e19 apart, where the term is 0 to rounding anyway).
  let first = u32(offsets[i]);
  let end = u32(offsets[i + 1u]);
  var e = first;
  for (; e + 1u < end; e += 2u) {
    let t0 = edges[e];
    let t1 = edges[e + 1u];
    let d0 = yi - y[t0.x];
    let d1 = yi - y[t1.x];
    let a0 = 1.0 + dot(d0, d0);
    let a1 = 1.0 + dot(d1, d1);
    let inv = 1.0 / (a0 * a1);
    f += (bitcast<f32>(t0.y) * a1 * inv) * d0;
    f += (bitcast<f32>(t1.y) * a0 * inv) * d1;
  }
  if (e < end) {
    let t = edges[e];
    let d = yi - y[t.x];
    f += bitcast<f32>(t.y) / (1.0 + dot(d, d)) * d;
  }
  let grad = 4.0 * (arg_f32(3u) * f - repulse[i].xy / z[0]);
  let s = state[i];
  let u = s.xy;
  var g = s.zw;
  g = select(g * 0.8, g + 0.2, (grad > vec2<f32>(0.0)) != (u > vec2<f32>(0.0)));
  g = max(g, vec2<f32>(0.01));
  var nu = arg_f32(2u) * u - arg_f32(1u) * g * grad;
  let len = length(nu);
  if (len > arg_f32(4u)) { nu *= arg_f32(4u) / len; }
  state[i] = vec4<f32>(nu, g);
  y_out[i] = yi + nu;
}
