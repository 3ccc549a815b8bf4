// Internal state of the gpu layer. Only src/gpu/*.cpp include this (and with it webgpu.h).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <unordered_map>

#include "pipelines.hpp"
#include "platform/host_resources.hpp"
#include "surfgrad/gpu.hpp"
#include "webgpu_api.hpp"

namespace surfgrad::gpu {

inline std::string to_std(WGPUStringView s) {
  if (!s.data) return {};
  return s.length == WGPU_STRLEN ? std::string(s.data) : std::string(s.data, s.length);
}
inline WGPUStringView to_view(const std::string& s) { return {s.data(), s.size()}; }

// What a WebGPU callback reports, shared between the code waiting for it and the callback: a
// wait that ends early (the device was lost) must not leave the callback writing into a dead
// stack frame when it runs later. userdata() is handed to WebGPU, which calls the callback exactly
// once (with a "cancelled" status at the latest when the device or instance goes); the callback
// takes it back with from_userdata(), which ends WebGPU's share.
template <typename T>
struct CallbackSlot {
  std::shared_ptr<T> state = std::make_shared<T>();
  void* userdata() const { return new std::shared_ptr<T>(state); }
  static std::shared_ptr<T> from_userdata(void* ud) {
    std::unique_ptr<std::shared_ptr<T>> held(static_cast<std::shared_ptr<T>*>(ud));
    return *held;
  }
};

// An error scope's answer as its pop reports it (done once the callback has run).
struct ScopeAnswer {
  bool done = false;
  WGPUErrorType type = WGPUErrorType_NoError;
  std::string message;
};

// Pops `device`'s innermost error scope into slot's state (a ScopeAnswer, or a struct deriving
// from one): the answer comes when WebGPU runs the callback, which holds its own reference. A pop
// that fails (no scope, device lost) answers WGPUErrorType_Unknown.
template <typename T>
void pop_error_scope(WGPUDevice device, const CallbackSlot<T>& slot) {
  WGPUPopErrorScopeCallbackInfo cb = WGPU_POP_ERROR_SCOPE_CALLBACK_INFO_INIT;
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message, void* ud, void*) {
    auto answer = CallbackSlot<T>::from_userdata(ud);
    answer->done = true;
    answer->type = status == WGPUPopErrorScopeStatus_Success ? type : WGPUErrorType_Unknown;
    answer->message = to_std(message);
  };
  cb.userdata1 = slot.userdata();
  api().wgpuDevicePopErrorScope(device, cb);
}

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
  mutable platform::Mutex mutex_;
  struct Pooled {
    WGPUBuffer buffer;
    uint64_t id, last_batch;
  };
  std::multimap<uint64_t, Pooled> free_;  // by size class
  PoolStats stats_;
};

class BlobStore;
struct BufferState {
  WGPUBuffer buffer = nullptr;
  uint64_t id = 0;  // unique per WGPUBuffer ever created: keys the bind-group cache
  uint64_t capacity = 0;
  uint64_t last_batch = 0;  // the batch that last bound it (uploads must not overtake it)
  std::weak_ptr<BufferPool> pool;
};

uint64_t next_buffer_id();

// Pops one error scope and waits for its answer (commands.cpp). Open scopes only with
// Impl::builds.gate held (pipelines.hpp). While errors are deferred (Context::defer_errors) it
// does not wait: defer_scope keeps the answer for later and reports no error now.
std::pair<WGPUErrorType, std::string> pop_scope(Context::Impl& impl);
struct DeferredScope;  // deferred_errors.cpp
std::pair<WGPUErrorType, std::string> defer_scope(Context::Impl& impl);

// The profiler's name for a kernel cached under `key` (profile.cpp): the key without its
// "file|" prefix and entry point, up to any generated code, at most 72 characters.
std::string profile_label(const std::string& key, const std::string& entry);

struct KernelState {
  WGPUComputePipeline pipeline = nullptr;
  WGPUBindGroupLayout layout = nullptr;
  uint64_t id = 0;
  uint32_t meta_binding = UINT32_MAX;  // the dynamic-offset uniform binding, if any
  std::vector<bool> writable;          // per storage binding
  std::vector<KernelBinding> storage_bindings;
  std::string entry;
  std::string label;  // what the profiler calls it: the kernel's file or generator key
  // Wall time creating it (cold start, SURFGRAD_PROFILE's pipeline table): the shader module
  // (WGSL parsed and translated: naga or Tint) and the pipeline (the driver's compile; Dawn
  // translates there too), with the wait for the error scope.
  double module_ms = 0, pipeline_ms = 0;
  // When it was created (ms after the context's creation) and whether on the thread that asked
  // for it at its first use (a compile on the critical path) or by a prewarm's worker.
  double created_ms = 0;
  bool at_use = true;
  // What a kernel record keeps (kernel_record.cpp): the source asked for (before the
  // implementation's dialect pass) and whether it was asked for as validated; and the record
  // (KernelBuilds::Record::epoch) that lists it already.
  std::string source;
  bool validated = false;
  std::atomic<uint64_t> recorded{0};
  ~KernelState() {
    if (layout) api().wgpuBindGroupLayoutRelease(layout);
    if (pipeline) api().wgpuComputePipelineRelease(pipeline);
  }
};

// Bind groups cost more to create than the dispatch they serve; ops in a loop bind the same
// (recycled) buffers again and again. Keyed by kernel and buffer ids, which are never reused.
struct BindGroupKey {
  std::array<uint64_t, 10> ids{};
  bool operator==(const BindGroupKey&) const = default;
};
struct BindGroupKeyHash {
  size_t operator()(const BindGroupKey& k) const {
    uint64_t h = 1469598103934665603ull;
    for (uint64_t x : k.ids) h = (h ^ x) * 1099511628211ull;
    return size_t(h);
  }
};

struct Context::Impl {
  WGPUInstance instance = nullptr;
  WGPUAdapter adapter = nullptr;
  WGPUDevice device = nullptr;
  WGPUQueue queue = nullptr;
  AdapterInfo info;
  // Wall time of Context::create's steps (cold start): instance, adapter enumeration and
  // choice, device request.
  double instance_ms = 0, adapters_ms = 0, device_ms = 0;
  std::chrono::steady_clock::time_point born = std::chrono::steady_clock::now();
  BlobStore* pipeline_store = nullptr;  // Dawn's blob cache on disk (pipeline_cache.hpp); null when off
  std::vector<uint32_t> requested_features;
  Features features;
  Limits limits;
  uint32_t max_groups_per_dim = 65535;
  uint32_t min_uniform_offset_alignment = 256;
  bool trust_validated = true;    // ContextOptions::trust_validated_kernels
  bool unchecked_device = false;  // ContextOptions::own_kernels_only, under Dawn
  BufferPtr fault;                // one u32 that kernels set when they meet a bad index
  bool fault_pending = false;     // a kernel that may set it ran since the last check
  std::shared_ptr<BufferPool> pool;
  int failing_allocations = 0;  // tests only (ContextTesting): allocations of 1 MiB or more to fail
  // Guarded by builds.mutex (pipelines.cpp: worker threads build kernels too).
  std::unordered_map<std::string, Kernel> kernels;        // by full source
  std::unordered_map<std::string, Kernel> keyed_kernels;  // by caller's key
  KernelBuilds builds;                                    // builds under way, prewarm's workers, the error-scope gate
  std::unordered_map<BindGroupKey, WGPUBindGroup, BindGroupKeyHash> bind_groups;
  void clear_bind_groups();

  // Error scopes popped without waiting (Context::defer_errors): the label in force ("" when
  // not deferring) and the answers not yet settled, in order.
  std::string defer_label;
  std::vector<std::shared_ptr<DeferredScope>> deferred;

  // Sticky error state, written from WebGPU callbacks, thrown at the next call.
  platform::Mutex error_mutex;
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

  // SURFGRAD_PROFILE (profile.cpp): each dispatch in its own pass, timed by timestamp queries,
  // GPU time summed per kernel label and reported when the context closes.
  struct Profile {
    bool on = false, written = false;  // written: the table went out (Context::write_profile)
    std::string report_path;           // "" or "1": stderr
    WGPUQuerySet set = nullptr;
    uint32_t capacity = 0, used = 0;
    const KernelState* next = nullptr;                          // the kernel whose pass open_pass times next
    std::vector<std::string> pending;                           // labels of the passes not yet read back, in order
    std::map<std::string, std::pair<uint64_t, double>> totals;  // label → (dispatches, ns)
  } profile;

  void check();  // throws the sticky error or device loss
  void open_pass();
  void close_pass();
  void write_meta_uploads();
  void wait_idle();
  ~Impl();
};

}  // namespace surfgrad::gpu
