// Exact kNN: the streaming kernel (knn_fused.cpp), and the blocked path it replaced (distance
// tiles through matmul, then per-row top-k in topk_rows.wgsl), kept as its benchmark baseline.
#include <algorithm>
#include <cstdlib>
#include <span>
#include <tuple>

#include "maps/graph.hpp"
#include "maps/knn_fused.hpp"
#include "maps/knn_order.hpp"
#include "maps/knn_prune.hpp"
#include "maps/knn_rows_cpu.hpp"
#include "maps/knn_rows_gpu.hpp"
#include "maps/knn_subgroup_matrix.hpp"
#include "maps/list_blocks.hpp"
#include "platform/parallel.hpp"
#include "surfgrad/maps.hpp"
#include "tensor/internal.hpp"

namespace surfgrad {

// The selection kernel writes row `row` at row·stride; results of block r0 go r0 rows further,
// which the host folds into the output offset: a 10th parameter is not needed.
static kernels::Params offset_rows(kernels::Params meta, int64_t r0, int k) { return meta.add(r0 * k); }

// Checks shared by both exact paths: f32 [N, D] points, 1 ≤ k < N (k ≤ 128), a non-empty row range.
static void check_exact(const Tensor& x, int k, int64_t row_begin, int64_t row_end) {
  if (x.rank() != 2) throw Error(ErrorKind::Shape, "knn: points must be [N, D], got " + x.describe());
  if (x.dtype() != DType::f32) throw Error(ErrorKind::DType, "knn: points must be f32, got " + x.describe());
  int64_t n = x.shape(0);
  if (k < 1 || k > 128) throw Error(ErrorKind::Value, "knn: k must be in [1, 128], got " + std::to_string(k));
  if (k >= n)
    throw Error(ErrorKind::Value, "knn: k = " + std::to_string(k) + " needs more than " + std::to_string(k) +
                                      " points, got " + std::to_string(n));
  if (row_begin < 0 || row_end > n || row_begin >= row_end)
    throw Error(ErrorKind::Value, "knn: rows [" + std::to_string(row_begin) + ", " + std::to_string(row_end) +
                                      ") are not a non-empty range of the " + std::to_string(n) + " points");
  uint64_t bytes = uint64_t(n) * uint64_t(x.shape(1)) * 4,
           limit = x.context()->limits().max_storage_buffer_binding_size;
  if (bytes > limit)
    throw Error(ErrorKind::Value, "knn: points " + x.describe() + " take " + std::to_string(bytes >> 20) +
                                      " MiB, more than one storage binding holds on this adapter (" +
                                      std::to_string(limit >> 20) + " MiB): reduce D first (pca())");
}

KnnResult knn_exact(const Tensor& x, int k) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  if (x.rank() != 2) throw Error(ErrorKind::Shape, "knn: points must be [N, D], got " + x.describe());
  return knn_exact_rows(x, k, 0, x.shape(0));
}

namespace {
KnnResult knn_exact_rows_as_given(const Tensor& x, int k, int64_t row_begin, int64_t row_end, bool ordered);
}

KnnResult knn_exact_rows(const Tensor& x, int k, int64_t row_begin, int64_t row_end) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  check_exact(x, k, row_begin, row_end);
  // Large sets on GPUs: the points sorted by cell first, so that each block of rows meets its
  // near neighbours in its first tiles (knn_order.hpp); the lists come back in x's rows and ids.
  const int64_t n = x.shape(0);
  if (row_begin == 0 && row_end == n && knn_order_applies(*x.context(), n, x.shape(1))) {
    KnnOrder o = knn_locality_order(kernels::dense(x));
    if (o.defined()) return knn_unorder(knn_exact_rows_as_given(index_select(x, 0, o.order), k, 0, n, true), o);
  }
  return knn_exact_rows_as_given(x, k, row_begin, row_end, false);
}

namespace {
// `ordered`: x is sorted by cell (knn_order.hpp), which moves the subgroup-matrix kNN's bound on k.
KnnResult knn_exact_rows_as_given(const Tensor& x, int k, int64_t row_begin, int64_t row_end, bool ordered) {
  // Subgroup matrices (tensor cores; Dawn), the same lists by their f32 re-check
  // (knn_subgroup_matrix.cpp), where knn_subgroup_matrix_chosen says: NVIDIA adapters and small k
  // and large sets (UMAP's k = 15: 1M x 50-D in 2.85 s against the f32 kernel's 4.15 on the
  // H200; t-SNE's 90 it ties on points as given and wins on sorted ones, 3.40 s against 4.87),
  // or SURFGRAD_KNN_SUBGROUP_MATRIX=1|0.
  // On sorted points the streaming kernels skip the tiles no row of a block can use (knn_prune.hpp).
  const bool prune = ordered && row_begin == 0 && row_end == x.shape(0) && knn_prune_enabled(*x.context());
  if (knn_subgroup_matrix_chosen(*x.context(), row_end - row_begin, x.shape(1), k, ordered)) {
    KnnSubgroupMatrixOptions o;
    o.prune = prune;
    return knn_exact_subgroup_matrix(x, k, row_begin, row_end, o);
  }
  // Small sets on GPUs: a kernel that compiles fast (knn_rows_gpu.hpp; cold start).
  if (knn_rows_gpu_used(*x.context(), x.shape(0), x.shape(1))) {
    Tensor dense = kernels::dense(x);
    return knn_rows_gpu(dense, (dense * dense).sum({1}), k, row_begin, row_end);
  }
  // CPU adapters: one thread a row (knn_rows_cpu.hpp).
  if (knn_rows_cpu_used(*x.context(), x.shape(1))) {
    Tensor dense = kernels::dense(x);
    return knn_rows_cpu(dense, (dense * dense).sum({1}), k, row_begin, row_end);
  }
  return knn_exact_shaped(x, k, knn_fused_shape(*x.context(), k), row_begin, row_end, 0, prune);
}
}  // namespace

KnnResult knn_exact_shaped(const Tensor& x_in, int k, const KnnFusedShape& shape, int64_t row_begin, int64_t row_end,
                           int64_t pairs_per_dispatch, bool prune) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  if (row_end < 0) row_end = x_in.rank() == 2 ? x_in.shape(0) : 0;
  check_exact(x_in, k, row_begin, row_end);
  Tensor x = kernels::dense(x_in);
  Tensor norms = (x * x).sum({1});  // [N]
  if (!prune || !shape.select || !x.context()->features().subgroups)
    return knn_fused_rows(x, norms, k, row_begin, row_end, shape, pairs_per_dispatch);
  KnnPrune bounds = knn_prune_bounds(x, shape.bn, shape.bm, knn_prune_group_tiles(kKnnPruneGroupTiles));
  KnnResult out = knn_fused_rows(x, norms, k, row_begin, row_end, shape, pairs_per_dispatch, &bounds);
  knn_prune_set_last(knn_prune_counts(bounds, (x.shape(0) + shape.bn - 1) / shape.bn));
  return out;
}

KnnResult knn_exact_blocked(const Tensor& x_in, int k, int64_t row_begin, int64_t row_end, int64_t block_rows,
                            int64_t segment) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  check_exact(x_in, k, row_begin, row_end);
  int64_t n = x_in.shape(0);
  auto ctx = x_in.context();
  Tensor x = x_in.contiguous();
  Tensor norms = (x * x).sum({1});  // [N]
  if (block_rows <= 0) {
    // A [block, N] distance tile must fit one binding: at most half the adapter's binding limit
    // (lavapipe binds 128 MiB), and at most 256 MiB.
    uint64_t budget = std::min<uint64_t>(uint64_t(256) << 20, ctx->limits().max_storage_buffer_binding_size / 2);
    block_rows = std::max<int64_t>(1, std::min<int64_t>(n, int64_t(budget / 4) / n));
  }
  int64_t rows_out = row_end - row_begin;
  KnnResult out{Tensor::empty(ctx, {rows_out, k}, DType::i32), Tensor::empty(ctx, {rows_out, k}, DType::f32)};
  auto topk = kernels::Program::file(ctx, "topk_rows.wgsl", {{"K", std::to_string(k)}});
  // Two passes: S segments per row each keep their k best (S·B threads instead of B), then one
  // thread per row merges the S·k candidates. A CPU adapter has B threads enough for its few
  // cores, and every segment costs ~k insertions before its list fills: one segment a row
  // there (MNIST 10k, k = 90, lavapipe: 9.3 s → 3.3 s).
  if (segment <= 0) segment = ctx->info().is_cpu ? n : std::max<int64_t>(4 * k, 512);
  segment = std::max<int64_t>(segment, k);
  int64_t S = (n + segment - 1) / segment;
  Tensor xt = x.t();  // [D, N], a view: the matmul reads it in place
  for (int64_t r0 = row_begin; r0 < row_end; r0 += block_rows) {
    int64_t r1 = std::min(row_end, r0 + block_rows), B = r1 - r0;
    Tensor rows = x.slice(0, r0, r1);
    // |a|² + |b|² − 2 a·b for this block of rows against every point.
    Tensor d = add(sub(norms.slice(0, r0, r1).unsqueeze(1), rows.matmul(xt) * 2.0), norms.unsqueeze(0));
    kernels::Arg no_ids = kernels::unread(d);  // the candidates' ids: read in the second pass only
    if (S == 1) {
      // One segment per row: select straight into the result rows.
      topk.launch({out.indices, out.distances, kernels::view(d), no_ids},
                  offset_rows({B, 1, n, n, n, r0, d.offset(), 0, k}, r0 - row_begin, k),
                  kernels::groups_for(*ctx, B, 64));
      continue;
    }
    Tensor cand_i = Tensor::empty(ctx, {B, S * k}, DType::i32), cand_d = Tensor::empty(ctx, {B, S * k});
    topk.launch({cand_i, cand_d, kernels::view(d), no_ids}, {B * S, S, n, segment, n, r0, d.offset(), 0, S * k},
                kernels::groups_for(*ctx, uint64_t(B * S), 64));
    topk.launch({out.indices, out.distances, cand_d, cand_i},
                offset_rows({B, 1, S * k, S * k, S * k, r0, 0, 1, k}, r0 - row_begin, k),
                kernels::groups_for(*ctx, B, 64));
  }
  return out;
}

}  // namespace surfgrad

namespace surfgrad {

namespace {

// Threads that build one point's list together (nndescent.wgsl, the GPUs' kernel). Measured on
// the H100 at 1M × 50-D, T = 16/32/64/128: lists of 48 3.37 s with 32 (3.85–4.56 s otherwise),
// lists of 90 5.49 s with 64 (6.16–9.77 s otherwise).
int descent_threads(int k) { return k <= 48 ? 32 : 64; }

// `iterations` rounds of descent on x from `cur` (random lists when `init`). The lists are row
// blocks where one binding cannot hold them (list_blocks.hpp); a round writes each block in its
// own dispatch and reads the previous lists of all of them.
KnnResult descend(const Tensor& x_in, int k, int iterations, uint64_t seed, int reverse, KnnResult cur, bool init) {
  int64_t n = x_in.shape(0), d = x_in.shape(1);
  if (reverse < 0) reverse = std::min(k, 16);
  auto ctx = x_in.context();
  Tensor x = x_in.cast(DType::f32).contiguous();
  if (x.offset() != 0) x = x.clone();
  int r = std::max(reverse, 1);  // a binding of at least one slot, all −1 when reverse = 0
  const int64_t rows = list_block_rows(*ctx, n, k), blocks = (n + rows - 1) / rows;
  DescentKernel which = descent_kernel();
  if (which == DescentKernel::Auto)
    which = ctx->info().is_cpu ? DescentKernel::ThreadAPoint : DescentKernel::WorkgroupAPoint;
  const bool per_thread = which == DescentKernel::ThreadAPoint;
  auto kernel = [&](bool first) {
    size_t old_blocks = first ? 1 : size_t(blocks);  // INIT reads no previous lists
    return kernels::Program::file(
        ctx, per_thread ? "nndescent_thread.wgsl" : "nndescent.wgsl",
        {{"K", std::to_string(k)},
         {"R", std::to_string(reverse)},
         {"INIT", first ? "true" : "false"},
         {"T", std::to_string(descent_threads(k))},
         {"SKIP_OLD", descent_skips_old_pairs() ? "true" : "false"},
         {"OLD_INDEX", blocked_reader("old_index", "i32", 5, old_blocks, uint64_t(rows) * uint64_t(k))}});
  };
  auto fresh = [&] {
    std::vector<Tensor> idx, dist;
    for (int64_t r0 = 0; r0 < n; r0 += rows) {
      int64_t m = std::min(n, r0 + rows) - r0;
      idx.push_back(Tensor::empty(ctx, {m, k}, DType::i32));
      dist.push_back(Tensor::empty(ctx, {m, k}));
    }
    return std::pair{idx, dist};
  };
  auto [next_i, next_d] = fresh();
  Tensor rev = Tensor::full(ctx, {n, r}, -1, DType::i32);
  // Each list entry's new-bit (nndescent.wgsl), in two halves the rounds read and write in turn;
  // all set at the start (a given graph's entries are all new; INIT writes its half).
  const int64_t words = n * ((k + 31) / 32);
  Tensor flags = Tensor::full(ctx, {2 * words}, -1, DType::i32);
  const uint32_t hashed_seed = uint32_t(seed * 0x9E3779B9ull);
  // One round: every block of `out` from the previous lists `old` (unread by INIT), reading the
  // new-bits from half `half` and writing them to the other.
  auto round = [&](const kernels::Program& program, std::vector<Tensor>& out_i, std::vector<Tensor>& out_d,
                   const std::vector<Tensor>& old, bool first, int half) {
    for (int64_t b = 0; b < blocks; ++b) {
      int64_t r0 = b * rows, m = out_i[size_t(b)].shape(0);
      std::vector<kernels::Arg> args{out_i[size_t(b)], out_d[size_t(b)], x, rev, kernels::bits(flags)};
      if (first)
        args.push_back(kernels::unread(x));
      else
        for (const Tensor& t : old) args.emplace_back(t);
      program.launch(std::span<const kernels::Arg>(args), {n, d, hashed_seed, r0, m, half * words, (1 - half) * words},
                     kernels::groups_for(*ctx, uint64_t(m), per_thread ? 64 : 1));
    }
  };
  std::vector<Tensor> cur_i, cur_d;
  if (init) {
    std::tie(cur_i, cur_d) = fresh();
    round(kernel(true), cur_i, cur_d, {}, true, 1);  // writes half 0, which round 0 reads
  } else {
    cur_i = index_blocks(cur), cur_d = distance_blocks(cur);
    if (cur_i.size() != size_t(blocks))
      throw Error(ErrorKind::Shape, "knn: the starting lists come in " + std::to_string(cur_i.size()) +
                                        " blocks; this adapter needs " + std::to_string(blocks));
  }
  auto program = kernel(false);
  for (int it = 0; it < iterations; ++it) {
    if (reverse > 0)  // the reverse lists of the current graph (on the GPU: only the in-degrees come down)
      rev = sample_reverse_gpu(cur_i, rows, r);
    round(program, next_i, next_d, cur_i, false, it % 2);
    std::swap(cur_i, next_i);
    std::swap(cur_d, next_d);
  }
  return knn_from_blocks(std::move(cur_i), std::move(cur_d), rows);
}

}  // namespace

KnnResult knn_approx(const Tensor& x_in, int k, int iterations, uint64_t seed, int reverse) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  if (x_in.rank() != 2) throw Error(ErrorKind::Shape, "knn_approx: points must be [N, D], got " + x_in.describe());
  int64_t n = x_in.shape(0);
  if (k < 1 || k > 128 || k >= n)
    throw Error(ErrorKind::Value,
                "knn_approx: k = " + std::to_string(k) + " must be in [1, 128] and below N = " + std::to_string(n));
  return descend(x_in, k, iterations, seed, reverse, {}, true);
}

KnnResult knn_refine(const Tensor& x, const Tensor& graph, int iterations, int reverse) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  if (x.rank() != 2) throw Error(ErrorKind::Shape, "knn_refine: points must be [N, D], got " + x.describe());
  int64_t n = x.shape(0);
  if (graph.rank() != 2 || graph.shape(0) != n || graph.dtype() != DType::i32)
    throw Error(ErrorKind::Shape,
                "knn_refine: the graph must be i32 [" + std::to_string(n) + ", k], got " + graph.describe());
  int k = int(graph.shape(1));
  if (k < 1 || k > 128 || k >= n)
    throw Error(ErrorKind::Value,
                "knn_refine: k = " + std::to_string(k) + " must be in [1, 128] and below N = " + std::to_string(n));
  if (iterations < 1) throw Error(ErrorKind::Value, "knn_refine: iterations must be >= 1");
  // Indices outside [−1, N) would be read as rows of x by the kernel: refused on the host.
  std::vector<int32_t> idx = graph.to_vector<int32_t>();
  for (size_t e = 0; e < idx.size(); ++e)
    if (idx[e] < -1 || idx[e] >= n)
      throw Error(ErrorKind::Value, "knn_refine: graph entry [" + std::to_string(e / size_t(k)) + ", " +
                                        std::to_string(e % size_t(k)) + "] = " + std::to_string(idx[e]) +
                                        " is not a row of the " + std::to_string(n) + " points (or −1)");
  auto ctx = x.context();
  KnnResult cur{Tensor::from_vector(ctx, idx, {n, k}), Tensor::empty(ctx, {n, k})};  // distances: written by round 2
  return descend(x, k, iterations, 1, reverse, std::move(cur), false);
}

bool knn_is_exact(const gpu::Context& ctx, int64_t n, int64_t d, KnnMethod method, int k) {
  if (method != KnnMethod::Auto) return method == KnnMethod::Exact;
  // Exact lists are one tensor each; descent keeps longer ones in blocks (list_blocks.hpp).
  if (k > 0 && uint64_t(n) * uint64_t(k) * 4 > ctx.limits().largest_binding()) return false;
  return n <= kExactKnnLimit || (!ctx.info().is_cpu && double(n) * double(n) * double(d) <= kExactPairWorkOnGpu);
}

KnnResult nearest_neighbours(const Tensor& x, int k, uint64_t seed, KnnMethod method) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  if (x.rank() != 2) throw Error(ErrorKind::Shape, "knn: points must be [N, D], got " + x.describe());
  Tensor f = x.cast(DType::f32);
  if (knn_is_exact(*x.context(), x.shape(0), x.shape(1), method, k)) return knn_exact(f, k);
  // Short lists stall early in descent: search with 48 and keep the k nearest (recall@15 at a
  // million 50-D points: 0.87 with 32). Reverse neighbours: 16 for short lists, 8 for long ones
  // (whose own candidates are already many; 4 rounds reach 0.95 recall@90 there).
  int search = int(std::min<int64_t>(std::max(k, 48), x.shape(0) - 1));
  KnnResult r = knn_approx(f, search, search <= 48 ? 8 : 4, seed, search <= 48 ? 16 : 8);
  if (search == k) return r;
  std::vector<Tensor> idx = index_blocks(r), dist = distance_blocks(r);
  for (size_t b = 0; b < idx.size(); ++b) {
    idx[b] = idx[b].slice(1, 0, k).contiguous();
    dist[b] = dist[b].slice(1, 0, k).contiguous();
  }
  // The k nearest of longer lists may fit one binding where the search's did not.
  if (idx.size() > 1 && list_block_rows(*x.context(), x.shape(0), k) == x.shape(0))
    return {concat(idx, 0), concat(dist, 0)};
  return knn_from_blocks(std::move(idx), std::move(dist), r.block_rows);
}

double knn_recall_sampled(const Tensor& x, const KnnResult& approx, int64_t sample) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  int64_t n = approx.rows(), k = approx.k();
  sample = std::min(sample, n);
  // Eight runs of consecutive points spread over the set: each run is one block of exact rows.
  int64_t runs = std::min<int64_t>(8, sample), per = sample / runs;
  double hits = 0;
  for (int64_t r = 0; r < runs; ++r) {
    int64_t b = r * (n / runs), e = std::min(n, b + per);
    KnnResult exact = knn_exact_rows(x.cast(DType::f32), int(k), b, e);
    // Recall compares ids only: a graph made elsewhere may come without its distances.
    hits += knn_recall(approx.rows_between(b, e), exact) * double(e - b);
  }
  return hits / double(runs * per);
}

double knn_recall(const KnnResult& approx, const KnnResult& exact) {
  // Both lists' ids on the host, block by block where they are row blocks (their distances are
  // not needed, and a graph made elsewhere may come without them).
  int64_t k = exact.k(), n = exact.rows();
  if (approx.rows() != n || approx.k() != k)
    throw Error(ErrorKind::Shape,
                "knn_recall: the lists compared must both be [N, k]: " + std::to_string(approx.rows()) + " × " +
                    std::to_string(approx.k()) + " against " + std::to_string(n) + " × " + std::to_string(k));
  std::vector<int32_t> a(size_t(n * k)), e(size_t(n * k));
  approx.to_host(a.data(), nullptr);
  exact.to_host(e.data(), nullptr);
  double hit = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t q = 0; q < k; ++q) hit += a[size_t(i * k + p)] == e[size_t(i * k + q)];
  return hit / double(n * k);
}

}  // namespace surfgrad
