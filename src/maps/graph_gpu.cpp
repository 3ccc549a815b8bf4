// The kNN graph's incoming edges on the GPU (graph.hpp, incoming_edges.wgsl): count, offsets on
// the host (N words each way), fill, then each target's edges put in increasing id.
#include <algorithm>
#include <limits>

#include "maps/graph.hpp"

namespace surfgrad {

Tensor incoming_edges_gpu(const Tensor& neighbours) {
  if (neighbours.rank() != 2 || neighbours.dtype() != DType::i32)
    throw Error(ErrorKind::Shape, "incoming edges: neighbours must be i32 [N, k], got " + neighbours.describe());
  auto ctx = neighbours.context();
  const int64_t n = neighbours.shape(0), k = neighbours.shape(1), edges = n * k;
  if (edges > std::numeric_limits<int32_t>::max())
    throw Error(ErrorKind::LimitExceeded,
                "incoming edges: " + std::to_string(edges) +
                    " edges do not fit the list's 32-bit ids; use fewer points or neighbours");
  Tensor nb = kernels::dense(neighbours);
  auto step = [&](int s) { return kernels::Program::file(ctx, "incoming_edges.wgsl", {{"STEP", std::to_string(s)}}); };
  Tensor counter = Tensor::zeros(ctx, {n}, DType::i32);
  Tensor scratch = Tensor::empty(ctx, {std::max<int64_t>(edges, 1)}, DType::i32);
  // Zeros: past the last listed edge (where empty slots, −1, left edges out) the list is 0, as
  // the host's is, not whatever a recycled buffer held (the tail no kernel reads, but a gather
  // over the whole edge range would, and the lists are compared whole).
  Tensor rev = Tensor::zeros(ctx, {n + 1 + edges}, DType::i32);
  auto per_edge = kernels::groups_for(*ctx, uint64_t(edges), 64);
  step(0).launch({nb, counter, kernels::unread(nb) /* offsets: not read by the count */, kernels::unread(scratch),
                  kernels::unread(rev)},
                 {n, edges}, per_edge);
  std::vector<int32_t> counts = counter.to_vector<int32_t>(), offsets(size_t(n + 1), 0);
  for (int64_t i = 0; i < n; ++i) offsets[size_t(i + 1)] = offsets[size_t(i)] + counts[size_t(i)];
  // Step 2 orders a target's d edges in d² comparisons by one workgroup: a hub listed by most
  // points (a point nearest to everyone) would take minutes. Such graphs go to the host's list.
  int32_t hub = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
  if (hub > (ctx->info().is_cpu ? 4096 : 65536))
    return Tensor::from_vector(ctx, incoming_edges(nb.to_vector<int32_t>(), n, k), {n + 1 + edges});
  Tensor offsets_t = Tensor::from_vector(ctx, offsets, {n + 1});
  Tensor cursor = Tensor::zeros(ctx, {n}, DType::i32);
  step(1).launch({nb, cursor, offsets_t, scratch, kernels::unread(rev)}, {n, edges}, per_edge);
  step(2).launch({kernels::unread(nb), kernels::unread(cursor), offsets_t, scratch, rev}, {n, edges},
                 kernels::groups_for(*ctx, uint64_t(n), 1));
  return rev;
}

// Descent's reverse lists without the round trip the host's sample took every round (the lists
// down, the CSR built on the host, the sample up: about a third of a million-point descent).
Tensor sample_reverse_gpu(const Tensor& neighbours, int r) {
  if (r < 1) throw Error(ErrorKind::Value, "reverse sample: r must be ≥ 1, got " + std::to_string(r));
  const int64_t n = neighbours.rank() == 2 ? neighbours.shape(0) : 0,
                k = neighbours.rank() == 2 ? neighbours.shape(1) : 0;
  if (n * r > std::numeric_limits<int32_t>::max())
    throw Error(ErrorKind::LimitExceeded, "reverse sample: " + std::to_string(n) + " × " + std::to_string(r) +
                                              " slots do not fit 32-bit indices; use fewer reverse neighbours");
  Tensor rev = incoming_edges_gpu(neighbours);  // checks the lists' rank and dtype
  auto ctx = neighbours.context();
  Tensor sampled = Tensor::empty(ctx, {n, r}, DType::i32);
  kernels::Program::file(ctx, "reverse_sample.wgsl")
      .launch({rev, sampled}, {n, k, r}, kernels::groups_for(*ctx, uint64_t(n * r), 64));
  return sampled;
}

}  // namespace surfgrad
