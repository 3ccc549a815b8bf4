// The symmetric attraction graph (see the header).
#include "maps/tsne_symmetric.hpp"

#include <algorithm>
#include <bit>
#include <utility>

#include "surfgrad/error.hpp"

namespace surfgrad {

SymmetricEdges symmetric_edges(const std::vector<int32_t>& nbr, const std::vector<float>& w, int64_t n, int k) {
  if (n < 1 || k < 1 || nbr.size() != size_t(n) * size_t(k) || w.size() != nbr.size())
    throw Error(ErrorKind::Shape, "tsne: symmetric edges need lists and weights of [" + std::to_string(n) + ", " +
                                      std::to_string(k) + "], got " + std::to_string(nbr.size()) + " and " +
                                      std::to_string(w.size()) + " entries");
  auto valid = [&](int64_t i, int32_t j) { return j >= 0 && j < n && j != i; };
  // Every directed edge i → j lands in row i and in row j: a counting pass, then a fill.
  std::vector<int64_t> start(size_t(n) + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    for (int s = 0; s < k; ++s)
      if (int32_t j = nbr[size_t(i * k + s)]; valid(i, j)) ++start[size_t(i) + 1], ++start[size_t(j) + 1];
  for (int64_t i = 0; i < n; ++i) start[size_t(i) + 1] += start[size_t(i)];
  std::vector<std::pair<int32_t, float>> both(
      static_cast<size_t>(start[size_t(n)]));  // (not size_t(...): clang reads a declaration)
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (int64_t i = 0; i < n; ++i)
    for (int s = 0; s < k; ++s)
      if (int32_t j = nbr[size_t(i * k + s)]; valid(i, j)) {
        float v = w[size_t(i * k + s)];
        both[size_t(fill[size_t(i)]++)] = {j, v};
        both[size_t(fill[size_t(j)]++)] = {int32_t(i), v};
      }
  // Each row by neighbour id (then weight: a fixed order), equal ids merged by summing.
  SymmetricEdges out;
  out.offsets.assign(size_t(n) + 1, 0);
  out.entries.reserve(both.size() * 2);
  for (int64_t i = 0; i < n; ++i) {
    auto first = both.begin() + start[size_t(i)], last = both.begin() + start[size_t(i) + 1];
    std::sort(first, last);
    for (auto e = first; e != last;) {
      int32_t j = e->first;
      float sum = 0;
      for (; e != last && e->first == j; ++e) sum += e->second;
      out.entries.push_back(uint32_t(j));
      out.entries.push_back(std::bit_cast<uint32_t>(sum));
    }
    if (out.entries.size() / 2 > size_t(INT32_MAX))
      throw Error(ErrorKind::LimitExceeded, "tsne: the symmetric graph has more than 2^31 entries");
    out.offsets[size_t(i) + 1] = int32_t(out.entries.size() / 2);
  }
  return out;
}

}  // namespace surfgrad
