// The gpu layer: the only part of surfgrad that talks to WebGPU (webgpu.h stays inside src/gpu).
//
//   auto ctx = surfgrad::gpu::Context::create();          // best adapter, lavapipe if no GPU
//   auto buf = ctx->alloc(1024);                           // pooled storage buffer
//   auto k = ctx->kernel(wgsl_source, "main");             // compiled once, cached by content
//   ctx->dispatch(k, {buf.get()}, meta_words, {groups});  // recorded, not yet submitted
//   ctx->download(*buf, host_ptr, 1024);                   // submits everything, waits, reads
//
// Work is recorded into one pending command buffer and submitted at sync points (download,
// sync(), or when the batch grows large). Errors from WebGPU callbacks are kept in a sticky
// state and thrown as surfgrad::Error at the next call.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "surfgrad/error.hpp"

namespace surfgrad::gpu {

enum class Backend { Auto, Vulkan, Gles, Metal, D3D12 };

struct ContextOptions {
  Backend backend = Backend::Auto;  // env SURFGRAD_BACKEND=vulkan|gles|metal|d3d12 overrides Auto
  std::string adapter;              // substring of the adapter name, or #N (the N-th); env SURFGRAD_ADAPTER
  bool quiet = false;               // suppress the one-line CPU fallback notice
  bool request_f16 = true;          // request shader-f16 where the adapter has it
  // Request wgpu-native's experimental native feature CooperativeMatrix (tensor cores through
  // naga's `enable wgpu_cooperative_matrix;`) where the adapter offers it. Opt-in (or env
  // SURFGRAD_COOPERATIVE_MATRIX=1): wgpu.h marks it experimental, and wgpu-native 29 has no
  // query for the shapes and types a device supports, so kernels must find out by trying.
  // wgpu-native 29.0.1.1 refuses the request (experimental features cannot be enabled through
  // its C API); the device is then created without it and Features says why.
  bool request_cooperative_matrix = false;
  // Kernels marked validated (every access guarded by its own bounds, tested on fuzzed shapes:
  // the matmul family) are compiled without naga's runtime bounds checks, through
  // wgpu-native's CreateShaderModuleTrusted — 11% faster matmul on an H200. false (or env
  // SURFGRAD_CHECKED_KERNELS=1) keeps every check, as a browser always does.
  bool trust_validated_kernels = true;
  // The context runs only surfgrad's own kernels (a map's: `surfgrad map`, the Python estimators'
  // map context), so under Dawn its device is created without robustness: no bounds clamps from
  // Tint, no robust buffer access in the driver (Dawn's `disable_robustness`; 0.4 s of the 1M
  // t-SNE's 6.6 on an H200, every map-path kernel tested bitwise equal with and without, see
  // docs/environment.md). Kernels a user writes (tile programs) refuse to run on it. No effect
  // under wgpu-native (trust_validated_kernels is its per-kernel form) or in the browser; env
  // SURFGRAD_CHECKED_KERNELS=1 keeps robustness on.
  bool own_kernels_only = false;
  // Testing aid: pretend the adapter allows at most this many workgroups per dimension, so
  // the multi-dimensional dispatch path is exercised with small tensors. 0 = adapter's limit.
  uint32_t max_workgroups_per_dimension = 0;
  // Testing aid: pretend one storage binding holds at most this many bytes (and so does one
  // buffer), so the paths that split what outgrows a binding (a t-SNE graph at 10M points) run
  // on small inputs. 0 = the adapter's limit.
  uint64_t max_binding_bytes = 0;
};

struct AdapterInfo {
  std::string name, vendor, architecture, description, driver;
  std::string backend;         // "vulkan", "gles", ...
  std::string adapter_type;    // "discrete GPU", "integrated GPU", "CPU", ...
  std::string implementation;  // "wgpu-native 27.0.x.y", "Dawn (/path/libwebgpu_dawn.so)" (SURFGRAD_WEBGPU)
  bool is_cpu = false;
};

struct Features {
  bool shader_f16 = false;
  bool subgroups = false;
  bool timestamp_query = false;
  bool float32_atomics = false;             // atomicAdd on atomic<f32> (wgpu-native's shader-float32-atomic)
  bool cooperative_matrix = false;          // the device was created with it (requested and offered)
  bool cooperative_matrix_offered = false;  // the adapter offers it (whether requested or not)
  std::string cooperative_matrix_refusal;   // why a device with it was refused (then created without)
  // Dawn's chromium-experimental-subgroup-matrix (SURFGRAD_WEBGPU=dawn; issue 34): the device has
  // it, and the adapter's shapes ("f16xf16->f32 16x16x16", ...), as Dawn lists them.
  struct SubgroupMatrixShape {
    std::string component, result;  // "f16", "f32", "i8", "i32", ...
    uint32_t m = 0, n = 0, k = 0;
  };
  bool subgroup_matrix = false;
  std::vector<SubgroupMatrixShape> subgroup_matrix_configs;
  uint32_t subgroup_min_size = 0, subgroup_max_size = 0;  // measured by a kernel where not reported
  std::vector<std::string> adapter_features;              // everything the adapter reports, by name
  std::vector<std::string> device_features;               // what the device was created with
};

struct Limits {
  uint64_t max_buffer_size = 0;
  uint64_t max_storage_buffer_binding_size = 0;
  uint32_t max_storage_buffers_per_shader_stage = 0;
  uint32_t min_storage_buffer_offset_alignment = 0;
  uint32_t max_compute_workgroups_per_dimension = 0;
  uint32_t max_compute_invocations_per_workgroup = 0;
  uint32_t max_compute_workgroup_storage_size = 0;
  uint32_t max_compute_workgroup_size_x = 0;
  // The most one tensor may take: it is one buffer, bound whole as storage.
  uint64_t largest_binding() const { return std::min(max_buffer_size, max_storage_buffer_binding_size); }
};

struct PoolStats {
  uint64_t live_buffers = 0, live_bytes = 0;      // handed out and not yet released
  uint64_t peak_live_bytes = 0;                   // the most ever handed out at once
  uint64_t pooled_buffers = 0, pooled_bytes = 0;  // released, kept for reuse
  uint64_t allocations = 0, reuses = 0;           // device allocations vs pool hits
};

class Context;
struct BufferState;

// A device storage buffer from the pool; returned to the pool when the last owner lets go.
class Buffer {
 public:
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  uint64_t size() const;  // usable bytes (the pool may have allocated more)

 private:
  friend class Context;  // the only user of the device buffer behind it
  Buffer(std::shared_ptr<BufferState> state, uint64_t size) : state_(std::move(state)), size_(size) {}
  BufferState* state() const { return state_.get(); }
  std::shared_ptr<BufferState> state_;
  uint64_t size_;
};
using BufferPtr = std::shared_ptr<Buffer>;

// A binding a kernel's WGSL declares in group 0: `@binding(i) var<storage, read> name: array<T>`
// (or `var<uniform>`, the parameter block). Read from the source, so callers can check what they
// bind against what the kernel expects.
struct KernelBinding {
  uint32_t index = 0;
  std::string name;     // the WGSL variable
  std::string element;  // the array's element type as written: "f32", "vec2<f32>", "atomic<u32>"
  bool writable = false;
  bool uniform = false;
};
// Every binding of group 0 declared in `wgsl` (outside comments), in source order.
std::vector<KernelBinding> declared_bindings(std::string_view wgsl);

struct KernelState;
// A compiled compute pipeline. Cheap to copy.
struct Kernel {
  std::shared_ptr<KernelState> state;
  const std::vector<KernelBinding>& storage_bindings() const;  // by index 0..n-1, no uniform
  const std::string& entry() const;
};

// A readback queued now and collected later (Context::download_later): wait() blocks only until
// the GPU has reached the copy, while the work queued after it keeps the GPU busy. A download()
// instead waits for all queued work, and the GPU idles until the host submits again. Must not
// outlive its context; dropped unwaited, the copy is abandoned.
class PendingDownload {
 public:
  PendingDownload();
  PendingDownload(PendingDownload&& o) noexcept;
  PendingDownload& operator=(PendingDownload&& o) noexcept;
  PendingDownload(const PendingDownload&) = delete;
  PendingDownload& operator=(const PendingDownload&) = delete;
  ~PendingDownload();
  bool pending() const { return state_ != nullptr; }
  void wait(void* data);  // the bytes, once; then no longer pending

 private:
  friend class Context;
  struct State;
  std::unique_ptr<State> state_;
};

struct Workgroups {
  uint32_t x = 1, y = 1, z = 1;
};

class Context : public std::enable_shared_from_this<Context> {
 public:
  static std::shared_ptr<Context> create(const ContextOptions& options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const AdapterInfo& info() const;
  const Features& features() const;
  const Limits& limits() const;  // device limits (the adapter's full limits are requested)
  uint32_t max_workgroups_per_dimension() const;

  // Storage buffers. alloc throws LimitExceeded past the adapter's limits, OutOfMemory if the
  // device refuses; `what` names the tensor in the message.
  BufferPtr alloc(uint64_t bytes, const std::string& what = "buffer");
  void upload(const Buffer& dst, const void* data, uint64_t bytes, uint64_t offset = 0);
  void download(const Buffer& src, void* data, uint64_t bytes, uint64_t offset = 0);       // syncs
  PendingDownload download_later(const Buffer& src, uint64_t bytes, uint64_t offset = 0);  // see PendingDownload
  PoolStats pool_stats() const;
  void trim_pool();  // release every pooled (unused) buffer to the device

  // WGSL preamble for this implementation and the features a kernel needs. Kernels are written
  // in standard WGSL; the preamble holds the `enable` lines each implementation wants.
  // cooperative_matrix adds `enable wgpu_cooperative_matrix;` (throws Unsupported where the
  // device was not created with the feature).
  std::string wgsl_preamble(bool f16, bool subgroups = false, bool cooperative_matrix = false) const;
  // validated: the caller vouches that every memory access of the kernel is in bounds by its
  // own guards (see ContextOptions::trust_validated_kernels).
  Kernel kernel(const std::string& wgsl, const std::string& entry = "main", bool validated = false);
  // The same, cached under a caller-chosen key that identifies the source: the hot path looks
  // up a short key instead of building and hashing the full WGSL text.
  Kernel kernel(const std::string& key, const std::function<std::string()>& make_wgsl,
                const std::string& entry = "main", bool validated = false);
  // Starts building the kernel a later kernel(key, ...) call will ask for, on a worker thread
  // (cold start: compiled while earlier work runs); returns at once. That call finds it built,
  // waits for the build under way, or builds it itself if no worker has started it: never twice.
  // A failed build is thrown by that first use. False where it does nothing: the kernel is built
  // or queued already, SURFGRAD_PREWARM=0, Dawn (its device is not thread-safe here), WebAssembly.
  // `ahead`: needed before the builds queued so far (still in order among those queued ahead).
  bool prewarm(const std::string& key, std::string wgsl, const std::string& entry = "main", bool validated = false,
               bool ahead = false);
  // Cold start across runs (src/gpu/kernel_record.cpp, docs/cold_start.md): the kernels a named
  // kind of run (a map by t-SNE, say) used between begin_kernel_record and end_kernel_record are
  // kept on disk beside the pipeline cache (their sources, per adapter); prewarm_recorded(name)
  // queues them on the prewarm's workers at the next run's start, in the order they were first
  // used. A recorded kernel serves a later use only if that use asks for the very same source,
  // so a stale record costs worker time, never a wrong kernel. Returns how many were queued.
  int prewarm_recorded(const std::string& name);
  // Returns whether this is the outermost record (a run inside a recorded one is part of it).
  bool begin_kernel_record(const std::string& name);
  void end_kernel_record(bool save);  // save: the run went well (nested pairs: the outermost saves)
  bool trusts_validated_kernels() const;
  // Whether the device runs without robustness (ContextOptions::own_kernels_only under Dawn).
  bool unchecked_device() const;
  // Whether indirect dispatches are costly here because the implementation validates each one's
  // counts with GPU work of its own (Dawn, natively and in Chromium; on an H200 the 3 indirect
  // dispatches an iteration of t-SNE's FFT repulsion took Dawn's MNIST 10k optimisation from 0.33 s
  // to 0.69 s, wgpu-native's being 0.21 s). Callers with a cheap direct alternative take it here.
  // SURFGRAD_INDIRECT_DISPATCH=1 (cheap: use them) or =0 (costly: avoid them) overrides.
  bool indirect_dispatch_costly() const;
  size_t kernel_cache_size() const;
  // What starting cost so far (cold start, issue 35; SURFGRAD_PROFILE's table prints it too):
  // wall time of creating the instance, choosing the adapter, requesting the device, and of the
  // pipelines created (shader modules: WGSL parsed and translated; pipelines: the driver's
  // compile, which a warm driver or pipeline cache shortens).
  struct StartupStats {
    double instance_ms = 0, adapters_ms = 0, device_ms = 0;
    size_t pipelines = 0;
    double module_ms = 0, pipeline_ms = 0;  // summed over threads (prewarm's workers build in parallel)
    // prewarm(): builds queued, first uses that waited for one under way, and their wait.
    uint64_t prewarmed = 0, prewarm_waits = 0;
    double prewarm_wait_ms = 0;
    // Pipelines built by the thread that asked for them at their first use (on the critical
    // path: no prewarm had built them), and their wall time.
    size_t built_at_use = 0;
    double at_use_ms = 0;
    std::vector<std::string> built_at_use_labels;  // theirs (the profile's labels), in build order
    // The on-disk pipeline cache (Dawn only; src/gpu/pipeline_cache.hpp): "" when there is none.
    std::string pipeline_cache_dir;
    uint64_t cache_hits = 0, cache_misses = 0, cache_stores = 0, cache_rejected = 0, cache_store_failures = 0;
  };
  StartupStats startup_stats() const;

  // Records one dispatch. bindings are bound at 0..n-1; `meta` (if non-empty, ≤ 256 words) is
  // bound at n as `var<uniform> meta_u: array<vec4<u32>, 64>`, uploaded once per submission
  // together with every other dispatch's parameters.
  void dispatch(const Kernel& kernel, std::span<const Buffer* const> bindings, std::span<const uint32_t> meta,
                Workgroups groups);
  void dispatch(const Kernel& kernel, std::initializer_list<const Buffer*> bindings, std::span<const uint32_t> meta,
                Workgroups groups) {
    dispatch(kernel, std::span<const Buffer* const>(bindings.begin(), bindings.size()), meta, groups);
  }
  // The same, with the workgroup counts (three u32) read from `args` at `offset` when the
  // dispatch runs: an earlier kernel decides how much work there is (0 skips it) without a
  // round trip to the host.
  void dispatch_indirect(const Kernel& kernel, std::span<const Buffer* const> bindings, std::span<const uint32_t> meta,
                         const Buffer& args, uint64_t offset);
  void dispatch_indirect(const Kernel& kernel, std::initializer_list<const Buffer*> bindings,
                         std::span<const uint32_t> meta, const Buffer& args, uint64_t offset) {
    dispatch_indirect(kernel, std::span<const Buffer* const>(bindings.begin(), bindings.size()), meta, args, offset);
  }
  void copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t bytes);
  // Splits a count of workgroups over x, y and z when it exceeds the per-dimension limit.
  // Kernels recover the linear id as wid.x + nwg.x * (wid.y + nwg.y * wid.z) and skip ids past
  // the count.
  Workgroups grid_for(uint64_t workgroups) const;

  // Kernels that can meet invalid input (an index out of range) cannot throw; they OR a code
  // into this one-word buffer. fault_flag() marks that such a kernel is recorded;
  // take_faults() reads and clears the word if one was (a sync point), else returns 0.
  const Buffer& fault_flag();
  uint32_t take_faults();

  void flush();  // submit what is recorded
  void sync();   // submit and wait until the device is idle; throws any pending error
  uint64_t pending_dispatches() const;

  // Profiling: with SURFGRAD_PROFILE=1 (or =FILE) in the environment and an adapter with
  // timestamp queries, every dispatch runs in its own timed compute pass and, when the context
  // closes, a table of GPU time per kernel (dispatches, total ms, µs each, share) goes to stderr
  // (or FILE). Separate passes and periodic read-backs slow the work down; the per-kernel times
  // are what the GPU spent in each. profile_table() gives the table so far.
  std::string profile_table();
  // Writes that table now, once (the destructor does otherwise, where a failure can only be
  // printed): a program calls it before exiting so that a profile that cannot be written (a full
  // disk, /dev/full) fails the run. Throws Error(IO) naming SURFGRAD_PROFILE and the file.
  void write_profile();

  // Timestamp-query timing (benchmarks): every compute pass between begin_timing and
  // end_timing is timed on the GPU; end_timing syncs and returns the summed pass time in ms.
  // Returns a negative value where the adapter has no timestamp queries.
  void begin_timing();
  double end_timing_ms();
  // One timed run of `work` (the benchmarks' and the matmul tuner's): its GPU time in ms, or,
  // where the adapter has no timestamp queries, the wall time of running it and waiting for it.
  // `on_gpu` (if given) says which it was.
  double timed_ms(const std::function<void()>& work, bool* on_gpu = nullptr);

  // Checks that webgpu.h matches the loaded library: limits and adapter info read into structs
  // guarded by canary bytes, values in plausible ranges, requested features present on the
  // device. Returns the problems found (empty when consistent).
  std::vector<std::string> verify_header_matches_library() const;

  bool device_lost() const;

  // Deferred GPU errors (issue 36: JavaScript's tensor calls are synchronous, so they may not
  // wait for an error scope's answer). While a label is in force (defer_errors("matmul of
  // f32[2, 3] and f32[3, 4]"); it returns the label it replaces, "" for none, to restore), the
  // error scopes of kernel builds and large allocations are popped without waiting and their
  // answers kept under the label. settle_deferred_errors() waits for the answers kept so far and
  // throws the first error, named by its label (kernel rejected: Device; out of memory:
  // OutOfMemory); the WebGPU errors that followed from it are dropped, and pooled buffers are not
  // reused (a failed allocation must not be handed out again). src/gpu/deferred_errors.cpp.
  std::string defer_errors(std::string label);
  void settle_deferred_errors();

  struct Impl;

 private:
  friend struct ContextTesting;  // src/gpu/testing.hpp: hooks for the test suite only
  explicit Context(std::unique_ptr<Impl> impl);
  void destroy_device();
  void measure_subgroup_size();
  // Sets the pipeline and bind group of a dispatch (shared by the direct and indirect forms).
  void bind(const Kernel& kernel, std::span<const Buffer* const> bindings, std::span<const uint32_t> meta);
  // SURFGRAD_PROFILE (src/gpu/profile.cpp): before a dispatch, its own timed pass; reading the
  // timestamps back; the table written when the context closes.
  void profile_before_dispatch(const Kernel& kernel);
  void profile_collect();
  std::string startup_table() const;  // the profile's start-up and pipeline lines
  // The first `count` stamps of the profile's query set (profile) or of begin_timing's, resolved
  // and read back (a submit and a wait), with the queue's period in ns.
  std::vector<uint64_t> read_timestamps(bool profile, uint32_t count, double* period_ns);
  std::unique_ptr<Impl> impl_;
};

using ContextPtr = std::shared_ptr<Context>;

}  // namespace surfgrad::gpu
