// Row blocks of neighbour lists (list_blocks.hpp) and KnnResult's block-aware members.
#include "maps/list_blocks.hpp"

#include <algorithm>
#include <atomic>

#include "surfgrad/error.hpp"
#include "surfgrad/gpu.hpp"

namespace surfgrad {

namespace {
std::atomic<bool> skip_old_pairs{true};
std::atomic<DescentKernel> kernel_choice{DescentKernel::Auto};
}  // namespace

void set_descent_skips_old_pairs(bool skip) { skip_old_pairs = skip; }
bool descent_skips_old_pairs() { return skip_old_pairs; }
void set_descent_kernel(DescentKernel kernel) { kernel_choice = kernel; }
DescentKernel descent_kernel() { return kernel_choice; }

int64_t list_block_rows(const gpu::Context& ctx, int64_t n, int64_t k) {
  uint64_t limit = ctx.limits().largest_binding();
  int64_t most = std::max<int64_t>(1, int64_t(limit / (uint64_t(k) * 4)));  // rows one binding holds
  int64_t blocks = (n + most - 1) / most;
  if (blocks > kMaxListBlocks)
    throw Error(ErrorKind::LimitExceeded,
                "knn: " + std::to_string(n) + " points × " + std::to_string(k) + " neighbours take " +
                    std::to_string(uint64_t(n) * uint64_t(k) * 4 >> 20) + " MiB a list, more than " +
                    std::to_string(kMaxListBlocks) + " bindings of " + std::to_string(limit >> 20) +
                    " MiB on this adapter; use fewer neighbours (a lower perplexity) or map fewer points");
  return (n + blocks - 1) / blocks;
}

std::vector<Tensor> index_blocks(const KnnResult& r) { return r.blocked() ? r.index_blocks : std::vector{r.indices}; }

std::vector<Tensor> distance_blocks(const KnnResult& r) {
  return r.blocked() ? r.distance_blocks : std::vector{r.distances};
}

KnnResult knn_from_blocks(std::vector<Tensor> indices, std::vector<Tensor> distances, int64_t block_rows) {
  KnnResult r;
  if (indices.size() == 1) {
    r.indices = std::move(indices[0]);
    r.distances = std::move(distances[0]);
    return r;
  }
  r.index_blocks = std::move(indices);
  r.distance_blocks = std::move(distances);
  r.block_rows = block_rows;
  return r;
}

std::string blocked_reader(const std::string& name, const std::string& type, uint32_t first, size_t blocks,
                           uint64_t block_words) {
  std::string s;
  for (size_t b = 0; b < blocks; ++b)
    s += "@group(0) @binding(" + std::to_string(first + b) + ") var<storage, read> " + name + "_" + std::to_string(b) +
         ": array<" + type + ">;\n";
  s += "fn " + name + "_at(e: u32) -> " + type + " {\n";
  for (size_t b = 0; b + 1 < blocks; ++b)
    s += "  if (e < " + std::to_string((b + 1) * block_words) + "u) { return " + name + "_" + std::to_string(b) +
         "[e - " + std::to_string(b * block_words) + "u]; }\n";
  s += "  return " + name + "_" + std::to_string(blocks - 1) + "[e - " + std::to_string((blocks - 1) * block_words) +
       "u];\n}\n";
  return s;
}

int64_t KnnResult::rows() const {
  if (!blocked()) return indices.defined() ? indices.shape(0) : 0;
  int64_t n = 0;
  for (const Tensor& b : index_blocks) n += b.shape(0);
  return n;
}

int64_t KnnResult::k() const {
  const Tensor& t = blocked() ? index_blocks[0] : indices;
  return t.defined() && t.rank() == 2 ? t.shape(1) : 0;
}

void KnnResult::to_host(int32_t* indices_out, float* distances_out) const {
  std::vector<Tensor> ib = surfgrad::index_blocks(*this), db = surfgrad::distance_blocks(*this);
  for (size_t b = 0; b < ib.size(); ++b) {
    ib[b].to_host(indices_out);
    indices_out += ib[b].numel();
    if (distances_out) {
      db[b].to_host(distances_out);
      distances_out += db[b].numel();
    }
  }
}

KnnResult KnnResult::rows_between(int64_t begin, int64_t end) const {
  if (begin < 0 || end > rows() || begin >= end)
    throw Error(ErrorKind::Value, "knn: rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                                      ") are not a non-empty range of the " + std::to_string(rows()) + " lists");
  std::vector<Tensor> ib = surfgrad::index_blocks(*this), db = surfgrad::distance_blocks(*this);
  std::vector<Tensor> idx, dist;
  int64_t r0 = 0;
  for (size_t b = 0; b < ib.size(); ++b) {
    int64_t r1 = r0 + ib[b].shape(0), a = std::max(begin, r0), z = std::min(end, r1);
    if (a < z) {
      idx.push_back(ib[b].slice(0, a - r0, z - r0).contiguous());
      if (db[b].defined()) dist.push_back(db[b].slice(0, a - r0, z - r0).contiguous());
    }
    r0 = r1;
  }
  KnnResult r;
  r.indices = idx.size() == 1 ? idx[0] : concat(idx, 0);
  if (!dist.empty()) r.distances = dist.size() == 1 ? dist[0] : concat(dist, 0);
  return r;
}

}  // namespace surfgrad
