// Internal state of the gpu layer. Only src/gpu/*.cpp include this (and with it webgpu.h).
#pragma once
#include <webgpu/webgpu.h>
#include <webgpu/wgpu.h>

#include <array>
#include <map>
#include <mutex>
#include <unordered_map>

#include "surfgrad/gpu.hpp"

namespace surfgrad::gpu {

inline std::string to_std(WGPUStringView s) {
  if (!s.data) return {};
  return s.length == WGPU_STRLEN ? std::string(s.data) : std::string(s.data, s.length);
}
inline WGPUStringView to_view(const std::string& s) { return {s.data(), s.size()}; }

// Size-class pool: buffers are rounded up to classes of 2^k, 1.25·2^k, 1.5·2^k, 1.75·2^k
// (waste ≤ 25%) and reused by class, so steady-state training allocates nothing.
class BufferPool {
 public:
  BufferPool(WGPUDevice device) : device_(device) {}
  ~BufferPool();
  static uint64_t size_class(uint64_t bytes);
  std::shared_ptr<BufferState> acquire(uint64_t bytes, bool& fresh);
  void release(BufferState* state);
  void trim();
  PoolStats stats() const;

 private:
  WGPUDevice device_;
  mutable std::mutex mutex_;
  std::multimap<uint64_t, std::pair<WGPUBuffer, uint64_t>> free_;  // class -> (buffer, last batch)
  PoolStats stats_;
};

struct BufferState {
  WGPUBuffer buffer = nullptr;
  uint64_t capacity = 0;
  uint64_t last_batch = 0;  // the batch that last bound it (uploads must not overtake it)
  std::weak_ptr<BufferPool> pool;
};

struct KernelState {
  WGPUComputePipeline pipeline = nullptr;
  WGPUBindGroupLayout layout = nullptr;
  std::string entry;
  ~KernelState() {
    if (layout) wgpuBindGroupLayoutRelease(layout);
    if (pipeline) wgpuComputePipelineRelease(pipeline);
  }
};

struct Context::Impl {
  WGPUInstance instance = nullptr;
  WGPUAdapter adapter = nullptr;
  WGPUDevice device = nullptr;
  WGPUQueue queue = nullptr;
  AdapterInfo info;
  std::vector<uint32_t> requested_features;
  Features features;
  Limits limits;
  uint32_t max_groups_per_dim = 65535;
  uint32_t min_uniform_offset_alignment = 256;
  BufferPtr fault;          // one u32 that kernels set when they meet a bad index
  bool fault_pending = false;  // a kernel that may set it ran since the last check
  std::shared_ptr<BufferPool> pool;
  std::unordered_map<std::string, Kernel> kernels;       // by full source
  std::unordered_map<std::string, Kernel> keyed_kernels;  // by caller's key

  // Sticky error state, written from WebGPU callbacks, thrown at the next call.
  std::mutex error_mutex;
  std::string sticky_error;
  bool lost = false;
  std::string lost_message;

  // The pending batch: one encoder, at most one open compute pass.
  WGPUCommandEncoder encoder = nullptr;
  WGPUComputePassEncoder pass = nullptr;
  uint64_t batch_id = 1;
  uint64_t dispatches = 0;
  std::vector<BufferPtr> batch_keepalive;  // meta arena chunks of this batch
  std::vector<BufferPtr> meta_free;        // chunks no pending batch uses

  // Meta arena: small per-dispatch parameter blocks, written once per submission.
  std::vector<uint32_t> meta_words;
  BufferPtr meta_chunk;
  uint64_t meta_chunk_used = 0;
  std::vector<std::pair<BufferPtr, std::vector<uint8_t>>> meta_uploads;

  // Timestamp queries.
  WGPUQuerySet query_set = nullptr;
  uint32_t query_capacity = 0, queries_used = 0;
  bool timing = false;

  void check();  // throws the sticky error or device loss
  void open_pass();
  void close_pass();
  void write_meta_uploads();
  void wait_idle();
  ~Impl();
};

}  // namespace surfgrad::gpu
