// The kNN graph a map runs on, and its incoming edges, shared by t-SNE, UMAP and neighbour descent: kernels gather them
// per point (in a fixed order, so results do not depend on thread timing).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/launch.hpp"
#include "surfgrad/maps.hpp"

namespace surfgrad {

// CSR in one array: [offset_0 … offset_N, edge ids…]; the edges into point i are
// list[N + 1 + offset_i … N + 1 + offset_{i+1}), each an index e of the [N, k] neighbour list
// (its source point is e / k), in increasing e. Hubs cost their degree, not a padded row of the
// largest degree. Empty slots (−1, as neighbour descent may leave early on) have no edge.
// Built on the host's cores (graph.cpp) in `parts` concurrent parts (0: one per hardware thread,
// one for small graphs); the same list whatever their number.
std::vector<int32_t> incoming_edges(const std::vector<int32_t>& neighbours, int64_t n, int64_t k, int parts = 0);
// The same list built on the GPU from the [N, k] i32 neighbour lists where they are
// (graph_gpu.cpp): an i32 tensor [N + 1 + N·k]. Only the N in-degrees come down and the N + 1
// offsets go up, where the host's list moved the whole graph both ways (at a million points and
// k = 90, 360 MB each way and 1.9 s of t-SNE's 13.5).
Tensor incoming_edges_gpu(const Tensor& neighbours);

// Neighbour descent's reverse lists: for every point i, up to r points that have i among their k
// neighbours ([N, r], −1 where fewer), sampled evenly over i's incoming edges in edge order
// (deterministic). On the host from the lists (graph.cpp), and on the GPU from the lists where
// they are (graph_gpu.cpp: incoming_edges_gpu, then one kernel): the same numbers.
std::vector<int32_t> sample_reverse(const std::vector<int32_t>& neighbours, int64_t n, int k, int r);
Tensor sample_reverse_gpu(const Tensor& neighbours, int r);

// Neighbours handed to t-SNE or UMAP must be the [N, k] lists the method would compute.
// The kNN graph a map runs on: `given` (checked to be i32 indices and f32 distances [N, k], and
// copied dense where it is a view, e.g. a slice of a larger result: the kernels read plain rows),
// else computed.
inline KnnResult graph_for(const Tensor& x, int k, uint64_t seed, const KnnResult* given, const std::string& op,
                           const std::string& what_k) {
  if (!given) return nearest_neighbours(x, k, seed);
  int64_t n = x.shape(0);
  for (const Tensor* t : {&given->indices, &given->distances})
    if (t->rank() != 2 || t->shape(0) != n || t->shape(1) != k)
      throw Error(ErrorKind::Shape, op + ": given neighbours " + t->describe() + " are not [" + std::to_string(n) +
                                        ", " + std::to_string(k) + "] (N points, " + what_k + ")");
  if (given->indices.dtype() != DType::i32 || given->distances.dtype() != DType::f32)
    throw Error(ErrorKind::DType, op + ": given neighbours must be i32 indices and f32 distances, got " +
                                      given->indices.describe() + " and " + given->distances.describe());
  return {kernels::dense(given->indices), kernels::dense(given->distances)};
}

}  // namespace surfgrad
