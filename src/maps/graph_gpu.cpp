// The kNN graph's incoming edges on the GPU (graph.hpp, incoming_edges.wgsl): count, offsets on
// the host (N words each way), fill, then each target's edges put in increasing id; and
// descent's reverse lists sampled from them (reverse_sample.wgsl). Lists in row blocks
// (list_blocks.hpp) are counted and filled a block at a time, into blocks of whole targets.
#include <algorithm>
#include <limits>

#include "maps/graph.hpp"

namespace surfgrad {

namespace {

void check_lists(const std::vector<Tensor>& lists, int64_t block_rows, const char* op) {
  if (lists.empty()) throw Error(ErrorKind::Shape, std::string(op) + ": no neighbour lists");
  for (size_t b = 0; b < lists.size(); ++b) {
    const Tensor& t = lists[b];
    if (t.rank() != 2 || t.dtype() != DType::i32 || t.shape(1) != lists[0].shape(1))
      throw Error(ErrorKind::Shape, std::string(op) + ": neighbours must be i32 [N, k], got " + t.describe());
    // Every block but the last has block_rows rows; the last at most that many (and some).
    bool last = b + 1 == lists.size();
    if (block_rows <= 0 || (!last && t.shape(0) != block_rows) || (last && (t.shape(0) < 1 || t.shape(0) > block_rows)))
      throw Error(ErrorKind::Shape, std::string(op) + ": block " + std::to_string(b) + " of " +
                                        std::to_string(lists.size()) + " has " + std::to_string(t.shape(0)) +
                                        " rows; blocks of " + std::to_string(block_rows) +
                                        " rows (the last one at most that) were declared");
  }
}

// Blocks of whole targets, each at most `cap` edges: [first_target…, N] and their first edges.
void cut_targets(const std::vector<int32_t>& offsets, int64_t cap, IncomingEdges& out) {
  const int64_t n = int64_t(offsets.size()) - 1;
  out.first_target = {0};
  out.first_edge = {0};
  for (int64_t t = 0; t < n; ++t) {
    int64_t deg = offsets[size_t(t + 1)] - offsets[size_t(t)];
    if (deg > cap)
      throw Error(ErrorKind::LimitExceeded, "incoming edges: point " + std::to_string(t) + " has " +
                                                std::to_string(deg) + " in-edges, more than one binding holds (" +
                                                std::to_string(cap) + ")");
    if (offsets[size_t(t + 1)] - out.first_edge.back() > cap) {
      out.first_target.push_back(t);
      out.first_edge.push_back(offsets[size_t(t)]);
    }
  }
  out.first_target.push_back(n);
  out.first_edge.push_back(offsets[size_t(n)]);
}

}  // namespace

std::vector<int32_t> IncomingEdges::to_vector() const {
  std::vector<int32_t> all = offsets.to_vector<int32_t>();
  for (size_t b = 0; b < edges.size(); ++b) {
    std::vector<int32_t> ids = edges[b].to_vector<int32_t>();
    all.insert(all.end(), ids.begin(), ids.begin() + (first_edge[b + 1] - first_edge[b]));
  }
  return all;
}

IncomingEdges incoming_edges_gpu(const Tensor& neighbours) {
  return incoming_edges_gpu({neighbours}, neighbours.rank() == 2 ? neighbours.shape(0) : 0);
}

IncomingEdges incoming_edges_gpu(const std::vector<Tensor>& lists_in, int64_t block_rows, int64_t max_block_edges) {
  check_lists(lists_in, block_rows, "incoming edges");
  auto ctx = lists_in[0].context();
  const int64_t k = lists_in[0].shape(1);
  int64_t n = 0;
  std::vector<Tensor> lists;
  for (const Tensor& t : lists_in) n += t.shape(0), lists.push_back(kernels::dense(t));
  const int64_t edges = n * k;
  if (edges > std::numeric_limits<int32_t>::max())
    throw Error(ErrorKind::LimitExceeded,
                "incoming edges: " + std::to_string(edges) +
                    " edges do not fit the list's 32-bit ids; use fewer points or neighbours");
  if (max_block_edges <= 0) max_block_edges = int64_t(ctx->limits().largest_binding() / 4);
  const kernels::Program steps = kernels::Program::file(ctx, "incoming_edges.wgsl");  // the step is parameter 5
  IncomingEdges out;
  Tensor counter = Tensor::zeros(ctx, {n}, DType::i32);
  auto unread = [](const Tensor& t) { return kernels::unread(t); };
  // Fillers for the writable bindings a step does not use: one buffer each (WebGPU refuses a
  // buffer bound twice where one binding writes).
  Tensor spare_a = Tensor::empty(ctx, {1}, DType::i32), spare_b = Tensor::empty(ctx, {1}, DType::i32);
  for (size_t b = 0; b < lists.size(); ++b) {
    int64_t m = lists[b].numel();
    steps.launch({lists[b], counter, unread(lists[b]), unread(spare_a), unread(spare_b)},
                 {m, int64_t(b) * block_rows * k, 0, 0, 0, 0}, kernels::groups_for(*ctx, uint64_t(m), 64));
  }
  std::vector<int32_t> counts = counter.to_vector<int32_t>(), offsets(size_t(n + 1), 0);
  for (int64_t i = 0; i < n; ++i) offsets[size_t(i + 1)] = offsets[size_t(i)] + counts[size_t(i)];
  cut_targets(offsets, max_block_edges, out);
  const size_t blocks = out.first_target.size() - 1;
  // Step 2 orders a target's d edges in d² comparisons by one workgroup: a hub listed by most
  // points (a point nearest to everyone) would take minutes. Such graphs go to the host's list.
  int32_t hub = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
  if (hub > (ctx->info().is_cpu ? 4096 : 65536)) {
    std::vector<int32_t> host(static_cast<size_t>(edges));
    for (size_t b = 0; b < lists.size(); ++b) lists[b].to_host(host.data() + int64_t(b) * block_rows * k);
    std::vector<int32_t> all = incoming_edges(host, n, k);
    out.offsets = Tensor::from_vector(ctx, offsets, {n + 1});
    for (size_t q = 0; q < blocks; ++q) {
      int64_t e0 = out.first_edge[q], count = std::max<int64_t>(out.first_edge[q + 1] - e0, 1);
      std::vector<int32_t> ids(size_t(count), 0);
      std::copy(all.begin() + (n + 1 + e0), all.begin() + (n + 1 + out.first_edge[q + 1]), ids.begin());
      out.edges.push_back(Tensor::from_vector(ctx, ids, {count}));
    }
    return out;
  }
  out.offsets = Tensor::from_vector(ctx, offsets, {n + 1});
  Tensor cursor = Tensor::zeros(ctx, {n}, DType::i32);
  for (size_t q = 0; q < blocks; ++q) {
    int64_t t0 = out.first_target[q], t1 = out.first_target[q + 1], e0 = out.first_edge[q];
    int64_t count = std::max<int64_t>(out.first_edge[q + 1] - e0, 1);
    Tensor scratch = Tensor::empty(ctx, {count}, DType::i32);
    out.edges.push_back(Tensor::empty(ctx, {count}, DType::i32));
    for (size_t b = 0; b < lists.size(); ++b) {  // every list block's edges into these targets
      int64_t m = lists[b].numel();
      steps.launch({lists[b], cursor, out.offsets, scratch, unread(spare_b)},
                   {m, int64_t(b) * block_rows * k, t0, t1, e0, 1}, kernels::groups_for(*ctx, uint64_t(m), 64));
    }
    steps.launch({unread(out.offsets), unread(cursor), out.offsets, scratch, out.edges.back()}, {0, 0, t0, t1, e0, 2},
                 kernels::groups_for(*ctx, uint64_t(t1 - t0), 1));
  }
  return out;
}

Tensor sample_reverse_gpu(const Tensor& neighbours, int r) {
  return sample_reverse_gpu({neighbours}, neighbours.rank() == 2 ? neighbours.shape(0) : 0, r);
}

// Descent's reverse lists without the round trip the host's sample took every round (the lists
// down, the CSR built on the host, the sample up: about a third of a million-point descent).
Tensor sample_reverse_gpu(const std::vector<Tensor>& lists, int64_t block_rows, int r, int64_t max_block_edges) {
  if (r < 1) throw Error(ErrorKind::Value, "reverse sample: r must be ≥ 1, got " + std::to_string(r));
  check_lists(lists, block_rows, "reverse sample");
  const int64_t k = lists[0].shape(1);
  int64_t n = 0;
  for (const Tensor& t : lists) n += t.shape(0);
  if (n * r > std::numeric_limits<int32_t>::max())
    throw Error(ErrorKind::LimitExceeded, "reverse sample: " + std::to_string(n) + " × " + std::to_string(r) +
                                              " slots do not fit 32-bit indices; use fewer reverse neighbours");
  IncomingEdges in = incoming_edges_gpu(lists, block_rows, max_block_edges);
  auto ctx = lists[0].context();
  Tensor sampled = Tensor::empty(ctx, {n, r}, DType::i32);
  auto sample = kernels::Program::file(ctx, "reverse_sample.wgsl");
  for (size_t q = 0; q + 1 < in.first_target.size(); ++q) {
    int64_t t0 = in.first_target[q], t1 = in.first_target[q + 1];
    if (t1 == t0) continue;
    sample.launch({in.offsets, in.edges[q], sampled}, {k, r, t0, t1, in.first_edge[q]},
                  kernels::groups_for(*ctx, uint64_t((t1 - t0) * r), 64));
  }
  return sampled;
}

}  // namespace surfgrad
