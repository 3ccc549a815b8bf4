// The kNN graph's incoming edges, shared by t-SNE, UMAP and neighbour descent: kernels gather them per
// point (in a fixed order, so results do not depend on thread timing).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "surfgrad/maps.hpp"

namespace surfgrad {

// CSR in one array: [offset_0 … offset_N, edge ids…]; the edges into point i are
// list[N + 1 + offset_i … N + 1 + offset_{i+1}), each an index e of the [N, k] neighbour list
// (its source point is e / k), in increasing e. Hubs cost their degree, not a padded row of the
// largest degree. Empty slots (−1, as neighbour descent may leave early on) have no edge.
inline std::vector<int32_t> incoming_edges(const std::vector<int32_t>& neighbours, int64_t n, int64_t k) {
  std::vector<int32_t> list(size_t(n + 1 + n * k), 0);
  for (int64_t e = 0; e < n * k; ++e)
    if (neighbours[size_t(e)] >= 0) list[size_t(neighbours[size_t(e)]) + 1]++;
  for (int64_t i = 0; i < n; ++i) list[size_t(i + 1)] += list[size_t(i)];
  std::vector<int32_t> fill(list.begin(), list.begin() + n);
  for (int64_t e = 0; e < n * k; ++e)
    if (neighbours[size_t(e)] >= 0) list[size_t(n + 1 + fill[size_t(neighbours[size_t(e)])]++)] = int32_t(e);
  return list;
}

// Neighbours handed to t-SNE or UMAP must be the [N, k] lists the method would compute.
inline void check_given_neighbours(const KnnResult& nn, int64_t n, int k, const std::string& op, const std::string& what_k) {
  if (nn.indices.rank() != 2 || nn.indices.shape(0) != n || nn.indices.shape(1) != k)
    throw Error(ErrorKind::Shape, op + ": given neighbours " + nn.indices.describe() + " are not [" + std::to_string(n) +
                                      ", " + std::to_string(k) + "] (N points, " + what_k + ")");
}

}  // namespace surfgrad
