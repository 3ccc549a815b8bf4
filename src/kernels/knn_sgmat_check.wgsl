// The float32 re-check of the subgroup-matrix exact kNN (knn_subgroup_matrix.cpp): a workgroup a
// query row takes the row's KP candidates (kept by the f16 score), computes their squared
// distances in f32 from the points themselves (Σ (x_i − x_j)², no cancellation), ranks them by
// (distance, id) and writes the K best. Then it checks that no point outside the candidates can
// beat the K-th. A point the stream turned away either failed the margin bar (its key passed the
// row's k-th key by more than 2·E_i: farther than k listed points, so never a neighbour) or did not
// beat the KP-th candidate's key then, and so not the final KP-th's either: its true key is at least
// that key minus E_i. Where that bound is not clear of the K-th distance the row is flagged, and
// the host recomputes it with the f32 kernel. A list left short ends in MAXF entries: clear.
//
// E_i (the binding `err`, computed on the host, which also derives the margin bar's 2.25·E_i from
// it) bounds |key − true key| for query i and any point j, with X = X̃ + r (prep kernel):
//   X_i·X_j − X̃_i·X̃_j = r_i·X_j + X̃_i·r_j, so |…| ≤ |r_i|(R̃ + ρ) + |X̃_i|ρ
//   (R̃ = max |X̃_j|, ρ = max |r_j|; Cauchy–Schwarz), the f32 accumulation of the f16 products
//   (exact in f32) adds at most γ·|X̃_i|·R̃ with γ = DP·2^-22 (any order, truncating adds counted
//   twice over), and the f32 norms, subtractions, the centring and this re-check at most
//   c32·(|X̃_i| + |r_i| + R̃ + ρ)² with c32 = (3D + 32)·2^-24. The key is |X_j|² − 2X_i·X_j (+|X_i|²),
//   so E_i = 2(|r_i|(R̃ + ρ) + |X̃_i|ρ + γ|X̃_i|R̃) + c32(…)², times 1.0625 for its own f32 rounding.
//   Split products (X̃·X̃ + X̃·r̃ + r̃·X̃, r̃ = r rounded to f16, q = r − r̃): the difference is
//   X̃_i·q_j + q_i·X̃_j + r_i·r_j, and 3·DP products accumulate: γ₃ = 3·DP·2^-22 times
//   |X̃_i|R̃ + |X̃_i|(ρ + ρ₂) + (|r_i| + |q_i|)R̃ (ρ₂ = max |q_j|).
// Parameters: [D, c0, crows, out_row0, K, KP, 1/s², no candidate was turned away (KP = N − 1)].
@group(0) @binding(0) var<storage, read_write> out_index: array<i32>;  // [rows, K]
@group(0) @binding(1) var<storage, read_write> out_dist: array<f32>;   // [rows, K]
@group(0) @binding(2) var<storage, read_write> flags: array<i32>;      // [rows]: 1 = recompute
@group(0) @binding(3) var<storage, read> cand_id: array<i32>;          // [crows, KP]
@group(0) @binding(4) var<storage, read> cand_key: array<f32>;         // [crows, KP], scaled keys, ascending
@group(0) @binding(5) var<storage, read> x: array<f32>;                // [N, D]
@group(0) @binding(6) var<storage, read> err: array<f32>;              // [NPAD]: E_i, the keys' error bound

const MAXC: u32 = 256u;
const MAXF: f32 = 0x1.fffffep+127f;
var<workgroup> cd: array<f32, MAXC>;
var<workgroup> ci: array<i32, MAXC>;
var<workgroup> kth: f32;

fn before(ka: f32, ia: i32, kb: f32, ib: i32) -> bool { return ka < kb || (ka == kb && ia < ib); }

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let g = linear_group(wid, nwg);
  if (g >= arg(2u)) { return; }
  let D = arg(0u); let K = arg(4u); let KP = arg(5u);
  let row = arg(1u) + g;
  let cbase = g * KP;
  for (var c = lid; c < KP; c += 64u) {
    let j = cand_id[cbase + c];
    var dist = MAXF;
    if (j >= 0) {
      var s = 0.0;
      for (var l = 0u; l < D; l++) {
        let t = x[row * D + l] - x[u32(j) * D + l];
        s = fma(t, t, s);
      }
      dist = s;
    }
    cd[c] = dist;
    ci[c] = j;
  }
  workgroupBarrier();
  let obase = (row - arg(3u)) * K;
  for (var c = lid; c < KP; c += 64u) {
    let dv = cd[c];
    let iv = ci[c];
    var place = 0u;
    for (var e = 0u; e < KP; e++) {
      if (before(cd[e], ci[e], dv, iv)) { place++; }
    }
    if (place < K) {
      out_dist[obase + place] = dv;
      out_index[obase + place] = iv;
    }
    if (place == K - 1u) { kth = dv; }
  }
  workgroupBarrier();
  if (lid == 0u) {
    let e = err[row];
    let lb = (cand_key[cbase + KP - 1u] - e) * arg_f32(6u);
    // The K-th distance is itself an f32 sum of D squares: give it its relative error.
    let ok = arg(7u) != 0u || lb > kth * (1.0 + f32(D + 4u) * 0x1p-22f);
    flags[row - arg(3u)] = select(1, 0, ok);
  }
}
