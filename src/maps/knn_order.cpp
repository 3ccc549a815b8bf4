// The exact kNN's locality order (knn_order.hpp): cell centres, the points' nearest centre, the
// centres' order, a counting sort.
#include "maps/knn_order.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <random>
#include <utility>

#include "maps/knn_rows_cpu.hpp"
#include "maps/knn_rows_gpu.hpp"
#include "surfgrad/error.hpp"

namespace surfgrad {

namespace {

// Recursive halving of ids[lo, hi) along the principal direction of their points (a few steps of
// power iteration from the axis of largest spread): the lower half first, then the upper, so
// consecutive leaves of the recursion are neighbours in space. Deterministic: ties in the
// projection go by id.
void halve(const std::vector<float>& x, int64_t d, std::vector<int32_t>& ids, size_t lo, size_t hi) {
  struct Range {
    size_t lo, hi;
  };
  std::vector<Range> stack{{lo, hi}};
  std::vector<double> mean(static_cast<size_t>(d)), v(static_cast<size_t>(d)), w(static_cast<size_t>(d));
  std::vector<std::pair<double, int32_t>> proj;
  while (!stack.empty()) {
    auto [a, b] = stack.back();
    stack.pop_back();
    if (b - a <= 2) continue;
    std::fill(mean.begin(), mean.end(), 0.0);
    for (size_t i = a; i < b; ++i)
      for (int64_t j = 0; j < d; ++j) mean[size_t(j)] += x[size_t(ids[i]) * size_t(d) + size_t(j)];
    for (double& m : mean) m /= double(b - a);
    auto centred = [&](size_t i, int64_t j) { return x[size_t(ids[i]) * size_t(d) + size_t(j)] - mean[size_t(j)]; };
    // The axis of largest spread as the start.
    int64_t axis = 0;
    double best = -1;
    for (int64_t j = 0; j < d; ++j) {
      double s = 0;
      for (size_t i = a; i < b; ++i) s += centred(i, j) * centred(i, j);
      if (s > best) best = s, axis = j;
    }
    std::fill(v.begin(), v.end(), 0.0);
    v[size_t(axis)] = 1;
    for (int step = 0; step < 6; ++step) {  // w = Σ (x − m)((x − m)·v), normalised
      std::fill(w.begin(), w.end(), 0.0);
      for (size_t i = a; i < b; ++i) {
        double p = 0;
        for (int64_t j = 0; j < d; ++j) p += centred(i, j) * v[size_t(j)];
        for (int64_t j = 0; j < d; ++j) w[size_t(j)] += centred(i, j) * p;
      }
      double norm = std::sqrt(std::inner_product(w.begin(), w.end(), w.begin(), 0.0));
      if (!(norm > 0)) break;  // all points equal: any order
      for (int64_t j = 0; j < d; ++j) v[size_t(j)] = w[size_t(j)] / norm;
    }
    proj.clear();
    for (size_t i = a; i < b; ++i) {
      double p = 0;
      for (int64_t j = 0; j < d; ++j) p += centred(i, j) * v[size_t(j)];
      proj.emplace_back(std::isfinite(p) ? p : std::numeric_limits<double>::max(), ids[i]);  // (a strict order)
    }
    const size_t half = (b - a) / 2;
    std::nth_element(proj.begin(), proj.begin() + std::ptrdiff_t(half), proj.end());
    std::sort(proj.begin(), proj.begin() + std::ptrdiff_t(half));
    std::sort(proj.begin() + std::ptrdiff_t(half), proj.end());
    for (size_t i = a; i < b; ++i) ids[i] = proj[i - a].second;
    stack.push_back({a + half, b});  // popped second: the upper half after the lower
    stack.push_back({a, a + half});
  }
}

}  // namespace

// Floyd's sample of c of n rows from a Mersenne twister (whose output the standard fixes; no
// distribution object, whose algorithm it leaves open), sorted. Evenly spaced rows, as here before,
// aliased with `bench knn`'s clusters (point i in cluster 7919·i mod 100): at 1M points the 1,024
// picks, 976.6 rows apart, lay in 64 of the 100 clusters, so 36 clusters' points went to cells of
// others and the sorted tiles mixed clusters (H200: a 64-point tile's radius 19.6 at 1M against
// 8.5 at 300k, where the picks met all 100).
std::vector<int32_t> knn_centre_picks(int64_t n, int64_t c) {
  if (n < 1 || c < 1 || c > n || n > int64_t(INT32_MAX))
    throw Error(ErrorKind::Value, "knn_centre_picks: " + std::to_string(c) + " centres of " + std::to_string(n) +
                                      " points (need 1 <= C <= N < 2^31)");
  std::mt19937_64 gen(0x6b6e6e5f63656c6cull);
  std::vector<bool> taken(static_cast<size_t>(n), false);
  std::vector<int32_t> picks;
  picks.reserve(static_cast<size_t>(c));
  for (int64_t j = n - c; j < n; ++j) {
    int64_t t = int64_t(gen() % uint64_t(j + 1));
    if (taken[size_t(t)]) t = j;
    taken[size_t(t)] = true;
    picks.push_back(int32_t(t));
  }
  std::sort(picks.begin(), picks.end());
  return picks;
}

kernels::Values nearest_centre_values(int64_t d) { return {{"DV", std::to_string((d + 3) / 4)}}; }

std::vector<int32_t> knn_centre_order(const std::vector<float>& centres, int64_t c, int64_t d) {
  if (c < 0 || d <= 0 || int64_t(centres.size()) != c * d)
    throw Error(ErrorKind::Shape, "knn_centre_order: " + std::to_string(centres.size()) + " floats for " +
                                      std::to_string(c) + " centres of " + std::to_string(d));
  std::vector<int32_t> ids(static_cast<size_t>(c));
  std::iota(ids.begin(), ids.end(), 0);
  halve(centres, d, ids, 0, ids.size());
  return ids;
}

Tensor knn_nearest_centres(const Tensor& x, const Tensor& centres) {
  if (x.rank() != 2 || centres.rank() != 2 || x.dtype() != DType::f32 || centres.dtype() != DType::f32 ||
      x.shape(1) != centres.shape(1) || centres.shape(0) < 1)
    throw Error(ErrorKind::Shape, "knn_nearest_centres: points and centres must be f32 [N, D] and [C, D], got " +
                                      x.describe() + " and " + centres.describe());
  auto ctx = x.context();
  const int64_t n = x.shape(0), d = x.shape(1), c = centres.shape(0);
  Tensor centre_norms = (centres * centres).sum({1}).unsqueeze(0);  // [1, C]
  // One kernel up to kNearestCentreMaxDims dimensions (knn_nearest_centre.wgsl), else chunks of
  // about 64 MiB of keys.
  Tensor nearest = Tensor::empty(ctx, {n}, DType::i32);
  if (d <= kNearestCentreMaxDims) {
    auto program = kernels::Program::file(ctx, "knn_nearest_centre.wgsl", nearest_centre_values(d));
    program.launch({nearest, kernels::dense(x), kernels::dense(centres), kernels::dense(centre_norms)}, {n, d, c},
                   kernels::groups_for(*ctx, uint64_t((n + 255) / 256), 1));
    return nearest;
  }
  Tensor centres_t = centres.t().contiguous();  // [D, C]
  const int64_t chunk = std::max<int64_t>(1, (int64_t(64) << 20) / (4 * c));
  for (int64_t a = 0; a < n; a += chunk) {
    const int64_t b = std::min(n, a + chunk);
    Tensor keys = centre_norms - 2.0 * x.slice(0, a, b).matmul(centres_t);
    nearest.slice(0, a, b).assign(keys.argmin(1));
  }
  return nearest;
}

KnnOrder knn_locality_order(const Tensor& x, int cells) {
  if (x.rank() != 2 || x.dtype() != DType::f32)
    throw Error(ErrorKind::Shape, "knn_locality_order: points must be f32 [N, D], got " + x.describe());
  auto ctx = x.context();
  const int64_t n = x.shape(0), d = x.shape(1);
  // Points with a NaN or infinite coordinate, or so large that squares overflow, get no order:
  // the kNN takes them as given, as it did before the order, whatever its lists make of them (a
  // NaN has no nearest centre, and ±inf sorts by sign, not by place).
  if (!std::isfinite((x * x).sum().to_vector<float>()[0])) return {};
  const int64_t c = std::clamp<int64_t>(cells, 1, std::max<int64_t>(1, n));
  const std::vector<int32_t> pick = knn_centre_picks(n, c);
  Tensor centres = index_select(x, 0, Tensor::from_vector(ctx, pick, {c}));  // [C, D]
  Tensor nearest = knn_nearest_centres(x, centres);
  // (A point without a nearest centre, argmin −1, cannot come from finite keys; checked anyway:
  // no index below may leave its array.)
  const std::vector<int32_t> owner = nearest.to_vector<int32_t>();
  for (int32_t o : owner)
    if (o < 0 || o >= c) return {};
  const std::vector<int32_t> centre_order = knn_centre_order(centres.to_vector<float>(), c, d);
  std::vector<int32_t> place(static_cast<size_t>(c));  // centre → its place in the order
  for (int64_t p = 0; p < c; ++p) place[size_t(centre_order[size_t(p)])] = int32_t(p);
  // Counting sort of the points by their centre's place (stable: by id within a cell).
  std::vector<int64_t> start(static_cast<size_t>(c) + 1, 0);
  for (int32_t o : owner) start[size_t(place[size_t(o)]) + 1]++;
  for (int64_t p = 0; p < c; ++p) start[size_t(p) + 1] += start[size_t(p)];
  std::vector<int32_t> order(static_cast<size_t>(n)), inverse(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t at = start[size_t(place[size_t(owner[size_t(i)])])]++;
    order[size_t(at)] = int32_t(i);
    inverse[size_t(i)] = int32_t(at);
  }
  return {Tensor::from_vector(ctx, order, {n}), Tensor::from_vector(ctx, inverse, {n})};
}

KnnResult knn_unorder(KnnResult sorted, const KnnOrder& o) {
  const int64_t n = sorted.indices.shape(0), k = sorted.indices.shape(1);
  // One list-sized temporary at a time beside the sorted lists, each released once gathered: at
  // most three lists' worth of memory, where the kNN itself holds two.
  Tensor ids = index_select(o.order, 0, sorted.indices.reshape({n * k})).reshape({n, k});
  sorted.indices = Tensor();
  KnnResult out;
  out.indices = index_select(ids, 0, o.inverse);
  ids = Tensor();
  out.distances = index_select(sorted.distances, 0, o.inverse);
  return out;
}

bool knn_order_applies(const gpu::Context& ctx, int64_t n, int64_t d) {
  return !knn_rows_gpu_used(ctx, n, d) && !knn_rows_cpu_used(ctx, d) && knn_order_chosen(ctx, n);
}

bool knn_order_rule(const std::string& env, bool is_cpu, bool browser, int64_t n) {
  if (!env.empty() && env != "cells" && env != "none")
    throw Error(ErrorKind::Value, "SURFGRAD_KNN_ORDER='" + env +
                                      "': use cells (sort the points by cell before the exact kNN), none, or leave "
                                      "it unset (GPUs from " +
                                      std::to_string(kKnnOrderMinPoints) + " points)");
  if (env == "none") return false;
  if (env == "cells") return true;
  return !is_cpu && !browser && n >= kKnnOrderMinPoints;
}

bool knn_order_chosen(const gpu::Context& ctx, int64_t n) {
  const char* env = std::getenv("SURFGRAD_KNN_ORDER");
#if defined(__wasm__)
  const bool browser = true;
#else
  const bool browser = false;
#endif
  return knn_order_rule(env ? env : "", ctx.info().is_cpu, browser, n);
}

}  // namespace surfgrad
