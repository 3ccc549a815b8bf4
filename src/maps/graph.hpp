// The kNN graph a map runs on, and its incoming edges, shared by t-SNE, UMAP and neighbour descent: kernels gather them
// per point (in a fixed order, so results do not depend on thread timing).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/launch.hpp"
#include "maps/list_blocks.hpp"
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
// (graph_gpu.cpp). Only the N in-degrees come down and the N + 1 offsets go up, where the host's
// list moved the whole graph both ways (at a million points and k = 90, 360 MB each way and
// 1.9 s of t-SNE's 13.5). The offsets and the edge ids are separate tensors, and the ids come in
// blocks of whole targets where one binding cannot hold them (t-SNE's 900M edges at 10M points).
struct IncomingEdges {
  Tensor offsets;                     // i32 [N + 1]: the edges into i are at positions [offsets[i], offsets[i + 1])
  std::vector<Tensor> edges;          // i32: the edge ids at those positions, block b from position first_edge[b]
  std::vector<int64_t> first_target;  // block b holds the edges into [first_target[b], first_target[b + 1])
  std::vector<int64_t> first_edge;    // offsets[first_target[b]], and the edge count last
  // The host's one-array form [offsets | ids] (incoming_edges above), for tests and tools.
  std::vector<int32_t> to_vector() const;
};
// From lists in row blocks of `block_rows` rows (list_blocks.hpp; one block: the plain [N, k]
// list). max_block_edges (0: what one binding holds) caps the ids a block of edges takes.
IncomingEdges incoming_edges_gpu(const std::vector<Tensor>& lists, int64_t block_rows, int64_t max_block_edges = 0);
IncomingEdges incoming_edges_gpu(const Tensor& neighbours);

// Neighbour descent's reverse lists: for every point i, up to r points that have i among their k
// neighbours ([N, r], −1 where fewer), sampled evenly over i's incoming edges in edge order
// (deterministic). On the host from the lists (graph.cpp), and on the GPU from the lists where
// they are (graph_gpu.cpp: incoming_edges_gpu, then one kernel a block of edges): the same numbers.
std::vector<int32_t> sample_reverse(const std::vector<int32_t>& neighbours, int64_t n, int k, int r);
Tensor sample_reverse_gpu(const std::vector<Tensor>& lists, int64_t block_rows, int r, int64_t max_block_edges = 0);
Tensor sample_reverse_gpu(const Tensor& neighbours, int r);

// Neighbours handed to t-SNE or UMAP must be the [N, k] lists the method would compute.
// The kNN graph a map runs on: `given` (checked to be i32 indices and f32 distances [N, k], plain
// or in row blocks, and copied dense where it is a view, e.g. a slice of a larger result: the
// kernels read plain rows), else computed.
inline KnnResult graph_for(const Tensor& x, int k, uint64_t seed, const KnnResult* given, const std::string& op,
                           const std::string& what_k) {
  if (!given) return nearest_neighbours(x, k, seed);
  int64_t n = x.shape(0);
  const std::vector<Tensor> idx = index_blocks(*given), dist = distance_blocks(*given);
  if (given->rows() != n || given->k() != k || idx.size() != dist.size())
    throw Error(ErrorKind::Shape, op + ": given neighbours " +
                                      (given->blocked() ? "in blocks" : given->indices.describe()) + " are not [" +
                                      std::to_string(n) + ", " + std::to_string(k) + "] (N points, " + what_k + ")");
  KnnResult out = *given;
  for (size_t b = 0; b < idx.size(); ++b) {
    const Tensor &i = idx[b], &d = dist[b];
    if (!d.defined() || d.rank() != 2 || i.rank() != 2 || d.shape(0) != i.shape(0) || d.shape(1) != k)
      throw Error(ErrorKind::Shape, op + ": given neighbour distances " + (d.defined() ? d.describe() : "none") +
                                        " do not match the indices " + i.describe());
    if (i.dtype() != DType::i32 || d.dtype() != DType::f32)
      throw Error(ErrorKind::DType, op + ": given neighbours must be i32 indices and f32 distances, got " +
                                        i.describe() + " and " + d.describe());
    if (given->blocked()) {
      out.index_blocks[b] = kernels::dense(i), out.distance_blocks[b] = kernels::dense(d);
    } else {
      out.indices = kernels::dense(i), out.distances = kernels::dense(d);
    }
  }
  return out;
}

}  // namespace surfgrad
