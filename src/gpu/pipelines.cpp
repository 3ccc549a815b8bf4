// Building compute pipelines: the kernel caches (by source and by the caller's key), one build per
// kernel however many threads ask for it, and prewarming (pipelines.hpp).
//
// Cold start (issue 35): a fresh process spends most of its start compiling pipelines (the
// driver's compile: ~0.9 s for t-SNE's 41 on an H200 with an empty driver cache). prewarm() hands
// kernels a later phase needs to worker threads, so they compile while earlier phases run; the
// first use finds the pipeline ready, waits for the build under way, or (not yet started) builds
// it itself. A build's failure is kept and thrown at that first use, naming the kernel.
//
// Errors: natively under wgpu-native a build catches its errors in the device's uncaptured-error
// callback, which wgpu-native calls on the thread that raised them (capture_build_error), so
// builds on several threads never wait for each other; under Dawn and in the browser a build
// opens an error scope (with the gate held exclusively). Under Dawn, whose device is not made
// thread-safe here, prewarm() does nothing.
//
// The browser (wasm32, no threads): every pipeline is compiled by createComputePipelineAsync
// (start_async below), never the synchronous createComputePipeline, which Chromium compiles on
// its GPU process's main thread, the thread that also composites the page (its frames stop for
// the compile: issue 32). prewarm() starts the build and returns; Dawn compiles on its worker
// pool, several at once; the first use waits for the answer (finish_pending), suspended (JSPI)
// while the page runs on.
#include "pipelines.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>

#include "impl.hpp"
#include "testing.hpp"

namespace surfgrad::gpu {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Errors the uncaptured-error callback sees on a worker thread while it builds a kernel.
thread_local std::string* t_build_errors = nullptr;

// The layout of a kernel's bindings: storage (read-only or read-write) and the uniform parameter
// block, bound with a dynamic offset. surfgrad's kernels declare every binding in group 0.
std::vector<WGPUBindGroupLayoutEntry> layout_entries(const std::vector<KernelBinding>& bindings) {
  std::vector<WGPUBindGroupLayoutEntry> entries;
  for (const KernelBinding& b : bindings) {
    WGPUBindGroupLayoutEntry e = WGPU_BIND_GROUP_LAYOUT_ENTRY_INIT;
    e.binding = b.index;
    e.visibility = WGPUShaderStage_Compute;
    if (b.uniform) {
      e.buffer.type = WGPUBufferBindingType_Uniform;
      e.buffer.hasDynamicOffset = true;
    } else {
      e.buffer.type = b.writable ? WGPUBufferBindingType_Storage : WGPUBufferBindingType_ReadOnlyStorage;
    }
    entries.push_back(e);
  }
  return entries;
}

// SURFGRAD_DUMP_WGSL=DIR writes every kernel as compiled (generated code included) to
// DIR/<hash>.wgsl, for reading or for other compilers (naga, tint).
void dump_wgsl(const std::string& key, const std::string& wgsl) {
  const char* dir = std::getenv("SURFGRAD_DUMP_WGSL");
  if (!dir || !*dir) return;
  char name[32];
  std::snprintf(name, sizeof name, "/%016zx.wgsl", std::hash<std::string>{}(key));
  // A folder that is not there (or not writable) is an error, not kernels silently missing.
  std::string path = std::string(dir) + name;
  errno = 0;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  bool ok = f && std::fwrite(wgsl.data(), 1, wgsl.size(), f) == wgsl.size() && std::fflush(f) == 0;
  int err = errno;
  if (f && std::fclose(f) != 0 && ok) ok = false, err = errno;
  if (!ok)
    throw Error(ErrorKind::IO, "SURFGRAD_DUMP_WGSL='" + std::string(dir) + "': cannot write the kernel '" + path +
                                   "' (" + (err ? std::strerror(err) : "unknown error") +
                                   "); set it to an existing, writable folder, or unset it");
}

// The compiler's message with the source, lines numbered (messages refer to them).
Error rejected(const Context::Impl& impl, const std::string& entry, const std::string& label, const std::string& wgsl,
               const std::string& message) {
  std::string listing;
  int line = 1;
  size_t pos = 0;
  while (pos < wgsl.size() && line <= 400) {
    size_t end = wgsl.find('\n', pos);
    if (end == std::string::npos) end = wgsl.size();
    listing += std::to_string(line++) + ": " + wgsl.substr(pos, end - pos) + "\n";
    pos = end + 1;
  }
  std::string name = "'" + entry + "'" + (label.empty() || label == entry ? "" : " (" + label + ")");
  return Error(ErrorKind::ShaderCompile, "kernel " + name + " was rejected by " + impl.info.implementation + ":\n" +
                                             message + "\n--- source ---\n" + listing);
}

// SURFGRAD_LOG_PIPELINES=1: a line on stderr per pipeline as it is created (when, where, how
// long), to find the ones built at first use on the critical path (cold start, issue 35).
void log_build(const KernelState& s, const std::string& label) {
  static const bool on = [] {
    const char* v = std::getenv("SURFGRAD_LOG_PIPELINES");
    return v && *v && std::string(v) != "0";
  }();
  if (!on) return;
  std::fprintf(stderr, "surfgrad pipeline: +%.1f ms %s module %.2f ms pipeline %.2f ms  %s\n", s.created_ms,
               s.at_use ? "first-use" : "worker   ", s.module_ms, s.pipeline_ms,
               (label.empty() ? s.entry : label).c_str());
}

struct SharedGate {
  ScopeGate& gate;
  explicit SharedGate(ScopeGate& g) : gate(g) { gate.lock_shared(); }
  ~SharedGate() { gate.unlock_shared(); }
};

std::shared_ptr<KernelState> make_state(Context::Impl& impl, WGPUComputePipeline pipeline, WGPUBindGroupLayout layout,
                                        uint32_t meta_binding, const std::vector<KernelBinding>& declared,
                                        const std::string& entry, const std::string& label, double module_ms,
                                        double pipeline_ms, bool at_use);

// Builds on CPU adapters take turns, across all contexts of the process. Mesa 22.3's lavapipe
// (Debian 12's CPU driver) is not safe to build two pipelines at once, though the Vulkan spec
// allows it: under ThreadSanitizer a prewarm worker's build wrote into a driver heap block of a
// build under way on the main thread, and about 1 run in 10 of the Python suite crashed on a
// corrupted heap (in Python's GC, a map lookup, wgpu-native's staging writes) until builds were
// serialised here. GPU drivers still build in parallel. One worker runs on CPU adapters anyway,
// so what is lost is only its overlap with a first use's build.
platform::Mutex& cpu_driver_builds() {
  static platform::Mutex& m = *new platform::Mutex;  // never destroyed: workers may build during exit
  return m;
}

// Creates the module, layout and pipeline of `wgsl` (already in the implementation's dialect).
// In the browser only for calls that cannot wait (source_kernel says which).
std::shared_ptr<KernelState> build_state(Context::Impl& impl, const std::string& wgsl, const std::string& entry,
                                         bool trusted, const std::string& label, bool on_worker) {
  // Native wgpu-native reports an error on the thread that raised it: every build there catches
  // its own (no scope, so a build never waits for another). Dawn and the browser open a scope.
  const bool caught_per_thread = on_worker || errors_caught_per_thread();
  std::string worker_errors;
  std::unique_ptr<SharedGate> shared;
  std::unique_ptr<ThreadErrors> capture;
  ScopeGuard exclusive(impl.builds.gate, !caught_per_thread);
  if (caught_per_thread) {
    shared = std::make_unique<SharedGate>(impl.builds.gate);
    capture = std::make_unique<ThreadErrors>(&worker_errors);
  } else {
    api().wgpuDevicePushErrorScope(impl.device, WGPUErrorFilter_Validation);
  }
  std::optional<platform::LockGuard<platform::Mutex>> driver_turn;
  if (impl.info.is_cpu) driver_turn.emplace(cpu_driver_builds());
  const auto t_module = Clock::now();
  WGPUShaderSourceWGSL source = WGPU_SHADER_SOURCE_WGSL_INIT;
  source.code = to_view(wgsl);
  WGPUShaderModuleDescriptor sdesc = WGPU_SHADER_MODULE_DESCRIPTOR_INIT;
  sdesc.nextInChain = &source.chain;
  WGPUShaderModule module = create_shader_module(impl.device, &sdesc, trusted);
  const double module_ms = ms_since(t_module);
  const auto t_pipeline = Clock::now();
  // An explicit layout (not "auto"): the parameter block is a uniform with a dynamic offset,
  // so one bind group serves every dispatch on the same buffers.
  std::vector<KernelBinding> declared = declared_bindings(wgsl);
  auto entries = layout_entries(declared);
  uint32_t meta_binding = UINT32_MAX;
  for (auto& e : entries)
    if (e.buffer.type == WGPUBufferBindingType_Uniform) meta_binding = e.binding;
  WGPUBindGroupLayoutDescriptor ldesc = WGPU_BIND_GROUP_LAYOUT_DESCRIPTOR_INIT;
  ldesc.entryCount = entries.size();
  ldesc.entries = entries.data();
  WGPUBindGroupLayout layout = api().wgpuDeviceCreateBindGroupLayout(impl.device, &ldesc);
  WGPUPipelineLayoutDescriptor pldesc = WGPU_PIPELINE_LAYOUT_DESCRIPTOR_INIT;
  pldesc.bindGroupLayoutCount = 1;
  pldesc.bindGroupLayouts = &layout;
  WGPUPipelineLayout pipeline_layout = api().wgpuDeviceCreatePipelineLayout(impl.device, &pldesc);
  WGPUComputePipelineDescriptor pdesc = WGPU_COMPUTE_PIPELINE_DESCRIPTOR_INIT;
  pdesc.layout = pipeline_layout;
  pdesc.compute.module = module;
  pdesc.compute.entryPoint = to_view(entry);
  WGPUComputePipeline pipeline = api().wgpuDeviceCreateComputePipeline(impl.device, &pdesc);
  // Not the error scope's wait below: under Dawn that can wait for work queued earlier.
  const double pipeline_ms = ms_since(t_pipeline);
  api().wgpuPipelineLayoutRelease(pipeline_layout);
  api().wgpuShaderModuleRelease(module);
  driver_turn.reset();
  WGPUErrorType type = WGPUErrorType_NoError;
  std::string message;
  if (caught_per_thread) {
    capture.reset();
    shared.reset();
    if (!worker_errors.empty()) type = WGPUErrorType_Validation, message = worker_errors;
  } else {
    std::tie(type, message) = pop_scope(impl);
    exclusive.release();
  }
  if (type != WGPUErrorType_NoError || !pipeline) {
    if (pipeline) api().wgpuComputePipelineRelease(pipeline);
    if (layout) api().wgpuBindGroupLayoutRelease(layout);
    if (!on_worker) impl.check();  // a lost device says so; the sticky error is the asking thread's
    throw rejected(impl, entry, label, wgsl, message);
  }
  return make_state(impl, pipeline, layout, meta_binding, declared, entry, label, module_ms, pipeline_ms, !on_worker);
}

// A built pipeline (owned from here on) as the caches keep it.
std::shared_ptr<KernelState> make_state(Context::Impl& impl, WGPUComputePipeline pipeline, WGPUBindGroupLayout layout,
                                        uint32_t meta_binding, const std::vector<KernelBinding>& declared,
                                        const std::string& entry, const std::string& label, double module_ms,
                                        double pipeline_ms, bool at_use) {
  auto state = std::make_shared<KernelState>();
  state->pipeline = pipeline;
  state->layout = layout;
  state->meta_binding = meta_binding;
  for (auto& b : declared)
    if (!b.uniform) {
      if (state->writable.size() <= b.index) state->writable.resize(b.index + 1, false);
      state->writable[b.index] = b.writable;
      state->storage_bindings.push_back(b);
    }
  std::sort(state->storage_bindings.begin(), state->storage_bindings.end(),
            [](const KernelBinding& a, const KernelBinding& b) { return a.index < b.index; });
  state->id = next_buffer_id();  // any unique number will do
  state->entry = entry;
  state->label = entry;
  state->module_ms = module_ms;
  state->pipeline_ms = pipeline_ms;
  state->created_ms = ms_since(impl.born);
  state->at_use = at_use;
  log_build(*state, label);
  return state;
}

// Ends a build others may be waiting on: with its kernel, or (k null: called from a catch
// block) with the failure being handled.
void complete(KernelBuild& b, const Kernel* k) {
#if SURFGRAD_HOST_HAS_THREADS
  std::lock_guard<std::mutex> l(b.mutex);
  b.done = true;
  if (k)
    b.kernel = *k;
  else
    b.error = std::current_exception();
  b.cv.notify_all();
#else
  b.done = true;
  if (k) b.kernel = *k;
#endif
}

// Waits for another thread's build of `b` (counted as a first use's wait when not on a worker).
[[maybe_unused]] Kernel wait_for(Context::Impl& impl, KernelBuild& b, bool on_worker) {
#if SURFGRAD_HOST_HAS_THREADS
  const auto t0 = Clock::now();
  std::unique_lock<std::mutex> l(b.mutex);
  b.cv.wait(l, [&] { return b.done; });
  l.unlock();  // done: b is not written again
  if (!on_worker) {
    platform::LockGuard lock(impl.builds.mutex);
    impl.builds.prewarm_waits++;
    impl.builds.prewarm_wait_ms += ms_since(t0);
  }
  if (b.error) std::rethrow_exception(b.error);
  return b.kernel;
#else
  (void)impl, (void)b, (void)on_worker;
  throw Error(ErrorKind::Value, "a kernel build is pending in a build without threads");
#endif
}

// The source-level cache's key: one pipeline per (trusted, entry, source in the dialect).
std::string source_key(bool trusted, const std::string& entry, const std::string& wgsl) {
  return (trusted ? "trusted|" : "") + entry + '\n' + wgsl;
}

#if defined(__wasm__)
}  // namespace

// ---- The browser: pipelines compiled asynchronously ----------------------------------------
// createComputePipelineAsync's answer; the pipeline is released here unless a cache took it.
struct PipelineAnswer {
  bool done = false;
  WGPUCreatePipelineAsyncStatus status = WGPUCreatePipelineAsyncStatus_InternalError;
  WGPUComputePipeline pipeline = nullptr;
  std::string message;
  Clock::time_point at;  // when the callback ran
  ~PipelineAnswer() {
    if (pipeline) api().wgpuComputePipelineRelease(pipeline);
  }
};

// One build under way: the module and layouts were created at its start (their errors in an
// error scope, popped without waiting), the pipeline is being compiled.
struct AsyncBuild {
  std::string source, wgsl, entry, label;  // source: as asked for; wgsl: in the dialect compiled
  bool validated = false, trusted = false;
  bool ahead = false;  // started by a prewarm, not by its first use
  WGPUBindGroupLayout layout = nullptr;
  uint32_t meta_binding = UINT32_MAX;
  std::vector<KernelBinding> declared;
  CallbackSlot<ScopeAnswer> scope;
  CallbackSlot<PipelineAnswer> pipeline;
  Clock::time_point started;
  double module_ms = 0;
  ~AsyncBuild() {
    if (layout) api().wgpuBindGroupLayoutRelease(layout);
  }
};

namespace {

// Creates the module and layouts of `wgsl` (in the implementation's dialect) and starts the
// pipeline's compile; nothing is waited for.
std::shared_ptr<AsyncBuild> start_async(Context::Impl& impl, const std::string& wgsl, const std::string& entry,
                                        bool trusted, const std::string& label, bool ahead) {
  auto a = std::make_shared<AsyncBuild>();
  a->wgsl = wgsl, a->entry = entry, a->label = label, a->trusted = trusted, a->ahead = ahead;
  a->started = Clock::now();
  api().wgpuDevicePushErrorScope(impl.device, WGPUErrorFilter_Validation);
  WGPUShaderSourceWGSL source = WGPU_SHADER_SOURCE_WGSL_INIT;
  source.code = to_view(wgsl);
  WGPUShaderModuleDescriptor sdesc = WGPU_SHADER_MODULE_DESCRIPTOR_INIT;
  sdesc.nextInChain = &source.chain;
  WGPUShaderModule module = create_shader_module(impl.device, &sdesc, trusted);
  a->declared = declared_bindings(wgsl);
  auto entries = layout_entries(a->declared);
  for (auto& e : entries)
    if (e.buffer.type == WGPUBufferBindingType_Uniform) a->meta_binding = e.binding;
  WGPUBindGroupLayoutDescriptor ldesc = WGPU_BIND_GROUP_LAYOUT_DESCRIPTOR_INIT;
  ldesc.entryCount = entries.size();
  ldesc.entries = entries.data();
  a->layout = api().wgpuDeviceCreateBindGroupLayout(impl.device, &ldesc);
  WGPUPipelineLayoutDescriptor pldesc = WGPU_PIPELINE_LAYOUT_DESCRIPTOR_INIT;
  pldesc.bindGroupLayoutCount = 1;
  pldesc.bindGroupLayouts = &a->layout;
  WGPUPipelineLayout pipeline_layout = api().wgpuDeviceCreatePipelineLayout(impl.device, &pldesc);
  WGPUComputePipelineDescriptor pdesc = WGPU_COMPUTE_PIPELINE_DESCRIPTOR_INIT;
  pdesc.layout = pipeline_layout;
  pdesc.compute.module = module;
  pdesc.compute.entryPoint = to_view(entry);
  WGPUCreateComputePipelineAsyncCallbackInfo cb = WGPU_CREATE_COMPUTE_PIPELINE_ASYNC_CALLBACK_INFO_INIT;
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPUCreatePipelineAsyncStatus status, WGPUComputePipeline pipeline, WGPUStringView message, void* ud,
                   void*) {
    auto answer = CallbackSlot<PipelineAnswer>::from_userdata(ud);
    answer->done = true, answer->status = status, answer->pipeline = pipeline, answer->message = to_std(message);
    answer->at = Clock::now();
  };
  cb.userdata1 = a->pipeline.userdata();
  // The bridge's import (webgpu_bridge.js); not in the native table (wgpu-native 29's panics).
  ::wgpuDeviceCreateComputePipelineAsync(impl.device, &pdesc, cb);
  // The module's compile errors (Tint's messages, naming lines) land in the scope; the
  // pipeline's own failure comes with its answer.
  pop_error_scope(impl.device, a->scope);
  api().wgpuPipelineLayoutRelease(pipeline_layout);
  api().wgpuShaderModuleRelease(module);
  a->module_ms = ms_since(a->started);
  return a;
}

// Waits until `a`'s scope and pipeline have answered: the instance's events run the callbacks
// (under JSPI the wasm is suspended meanwhile, as pop_scope waits). A lost device ends the wait.
void wait_async(Context::Impl& impl, const AsyncBuild& a) {
  for (int spins = 0; !(a.scope.state->done && a.pipeline.state->done); ++spins) {
    api().wgpuInstanceProcessEvents(impl.instance);
    if (a.scope.state->done && a.pipeline.state->done) break;
    poll(impl.instance, impl.device, spins > 1000);
    bool lost;
    {
      platform::LockGuard lock(impl.error_mutex);
      lost = impl.lost;
    }
    if (lost) impl.check();
  }
}

// The answered build as the caches keep it, or the compiler's message naming the kernel.
std::shared_ptr<KernelState> take_async(Context::Impl& impl, AsyncBuild& a) {
  ScopeAnswer& scope = *a.scope.state;
  PipelineAnswer& p = *a.pipeline.state;
  if (scope.type != WGPUErrorType_NoError || p.status != WGPUCreatePipelineAsyncStatus_Success || !p.pipeline) {
    std::string message = scope.type != WGPUErrorType_NoError ? scope.message : "";
    if (p.status != WGPUCreatePipelineAsyncStatus_Success && !p.message.empty())
      message += (message.empty() ? "" : "\n") + p.message;
    impl.check();
    throw rejected(impl, a.entry, a.label, a.wgsl, message);
  }
  const double pipeline_ms = std::chrono::duration<double, std::milli>(p.at - a.started).count() - a.module_ms;
  auto state = make_state(impl, std::exchange(p.pipeline, nullptr), std::exchange(a.layout, nullptr), a.meta_binding,
                          a.declared, a.entry, a.label, a.module_ms, pipeline_ms, !a.ahead);
  state->source = a.source;
  state->validated = a.validated;
  if (!a.label.empty()) state->label = a.label;
  return state;
}

// Starts the source-level build of `source_wgsl` unless it is built or under way; returns the
// build (null when built).
std::shared_ptr<KernelBuild> start_source_async(Context::Impl& impl, const std::string& source_wgsl,
                                                const std::string& entry, bool validated, const std::string& label,
                                                bool ahead, std::string* key_out = nullptr) {
  const std::string wgsl = standard_wgsl() ? dawn_wgsl(source_wgsl) : source_wgsl;
  const bool trusted = validated && impl.trust_validated;
  std::string key = source_key(trusted, entry, wgsl);
  if (key_out) *key_out = key;
  if (impl.kernels.count(key)) return nullptr;
  if (auto it = impl.builds.source_pending.find(key); it != impl.builds.source_pending.end()) return it->second;
  dump_wgsl(key, wgsl);
  auto b = std::make_shared<KernelBuild>();
  b->started = true;
  b->async = start_async(impl, wgsl, entry, trusted, label, ahead);
  b->async->source = source_wgsl;
  b->async->validated = validated;
  impl.builds.source_pending.emplace(key, b);
  return b;
}

// The kernel of a source-level build: waits for its answer, then moves it to the cache (or keeps
// its failure, thrown here and at every later wait on it; a later ask builds it again). Two
// calls may wait on one build (JSPI lets another export run while one is suspended): the first
// back takes it.
Kernel finish_pending(Context::Impl& impl, const std::string& key, const std::shared_ptr<KernelBuild>& b) {
  const bool waited_ahead = !b->done && b->async->ahead && !b->async->pipeline.state->done;
  const auto t0 = Clock::now();
  if (!b->done) wait_async(impl, *b->async);
  if (!b->done) {
    auto forget = [&] {
      auto it = impl.builds.source_pending.find(key);
      if (it != impl.builds.source_pending.end() && it->second == b) impl.builds.source_pending.erase(it);
      b->done = true;
    };
    try {
      Kernel k{take_async(impl, *b->async)};
      impl.kernels.emplace(key, k);
      b->kernel = k;
      forget();
    } catch (...) {
      b->error = std::current_exception();
      forget();
    }
    b->async.reset();  // its pipeline is the kernel's now; its layout and scope are done with
  }
  if (waited_ahead) {
    impl.builds.prewarm_waits++;
    impl.builds.prewarm_wait_ms += ms_since(t0);
  }
  if (b->error) std::rethrow_exception(b->error);
  return b->kernel;
}
#endif  // defined(__wasm__)

// The source-level cache: one pipeline per (trusted, entry, source in the implementation's
// dialect), built once however many threads ask (the others wait for it). `skip_if_building`
// (a recorded kernel's replay): another thread's build under way is left alone, and the Kernel
// returned is empty.
Kernel source_kernel(Context::Impl& impl, const std::string& source_wgsl, const std::string& entry, bool validated,
                     const std::string& label, bool on_worker, bool skip_if_building = false) {
  const std::string wgsl = standard_wgsl() ? dawn_wgsl(source_wgsl) : source_wgsl;
  const bool trusted = validated && impl.trust_validated;
  std::string key = source_key(trusted, entry, wgsl);
#if defined(__wasm__)
  // No workers: the GPU process builds (start_async) and this call waits for the answer.
  // Replays start theirs directly (prewarm_source), so nothing here skips one.
  (void)on_worker, (void)skip_if_building;
  if (impl.defer_label.empty()) {
    std::shared_ptr<KernelBuild> b = start_source_async(impl, source_wgsl, entry, validated, label, false);
    if (!b) return impl.kernels.at(key);
    return finish_pending(impl, key, b);
  }
  // A call that cannot wait (a synchronous tensor call: deferred_errors.cpp) builds the
  // synchronous way below, its errors deferred; a build under way it takes if answered, else
  // leaves (its pipeline is released when the answer comes).
  if (auto it = impl.builds.source_pending.find(key); it != impl.builds.source_pending.end()) {
    std::shared_ptr<KernelBuild> b = it->second;
    if (b->done || (b->async->scope.state->done && b->async->pipeline.state->done)) return finish_pending(impl, key, b);
    impl.builds.source_pending.erase(it);
  }
#endif
  std::shared_ptr<KernelBuild> b;
  {
    platform::LockGuard lock(impl.builds.mutex);
    if (auto it = impl.kernels.find(key); it != impl.kernels.end()) return it->second;
    if (auto it = impl.builds.source_pending.find(key); it != impl.builds.source_pending.end()) {
      if (skip_if_building) return {};
      b = it->second;
    } else {
      impl.builds.source_pending.emplace(key, std::make_shared<KernelBuild>());
    }
  }
  if (b) return wait_for(impl, *b, on_worker);
  auto done = [&](const Kernel* k) {
    std::shared_ptr<KernelBuild> mine;
    {
      platform::LockGuard lock(impl.builds.mutex);
      if (k) impl.kernels.emplace(key, *k);
      auto it = impl.builds.source_pending.find(key);
      mine = std::move(it->second);
      impl.builds.source_pending.erase(it);
    }
    complete(*mine, k);
  };
  try {
    dump_wgsl(key, wgsl);
    Kernel k{build_state(impl, wgsl, entry, trusted, label, on_worker)};
    k.state->source = source_wgsl;
    k.state->validated = validated;
    if (!label.empty()) k.state->label = label;  // a recorded kernel's replay keeps its name
    done(&k);
    return k;
  } catch (...) {
    done(nullptr);
    throw;
  }
}

// A kernel handed to a caller: listed in the record under way, if any (kernel_record.cpp). Two
// relaxed loads when a record is on, one when not: this is on every launch's path.
void note_use(Context::Impl& impl, const Kernel& k) {
  auto& r = impl.builds.record;
  if (!r.on.load(std::memory_order_relaxed) || !k.state) return;
  const uint64_t epoch = r.epoch.load(std::memory_order_relaxed);
  if (k.state->recorded.load(std::memory_order_relaxed) == epoch) return;
  platform::LockGuard lock(impl.builds.mutex);
  if (!r.on.load(std::memory_order_relaxed) || k.state->recorded.load(std::memory_order_relaxed) == epoch) return;
  k.state->recorded.store(epoch, std::memory_order_relaxed);
  r.used.push_back(k.state);
}

std::string full_key(const std::string& key, bool validated) { return validated ? "validated|" + key : key; }

}  // namespace

// ---- ScopeGate -----------------------------------------------------------------------------
#if SURFGRAD_HOST_HAS_THREADS
void ScopeGate::lock() {
  std::unique_lock<std::mutex> l(mutex_);
  ++writers_waiting_;
  auto free = [&] { return !writer_ && readers_ == 0; };
  if (!free()) {
    const auto t0 = Clock::now();
    cv_.wait(l, free);
    ++waits_;
    wait_ms_ += ms_since(t0);
  }
  --writers_waiting_;
  writer_ = true;
}
void ScopeGate::waited(uint64_t& times, double& ms) {
  std::lock_guard<std::mutex> l(mutex_);
  times = waits_, ms = wait_ms_;
}
void ScopeGate::unlock() {
  std::lock_guard<std::mutex> l(mutex_);
  writer_ = false;
  cv_.notify_all();
}
void ScopeGate::lock_shared() {
  std::unique_lock<std::mutex> l(mutex_);
  cv_.wait(l, [&] { return !writer_ && writers_waiting_ == 0; });
  ++readers_;
}
void ScopeGate::unlock_shared() {
  std::lock_guard<std::mutex> l(mutex_);
  if (--readers_ == 0) cv_.notify_all();
}
#else
void ScopeGate::waited(uint64_t& times, double& ms) { times = 0, ms = 0; }
void ScopeGate::lock() {}
void ScopeGate::unlock() {}
void ScopeGate::lock_shared() {}
void ScopeGate::unlock_shared() {}
#endif

bool errors_caught_per_thread() { return api().implementation == WebGpuImplementation::Wgpu && !kBrowserBuild; }

ThreadErrors::ThreadErrors(std::string* into) : previous_(t_build_errors) { t_build_errors = into; }
ThreadErrors::~ThreadErrors() { t_build_errors = previous_; }

bool capture_build_error(WGPUErrorType type, WGPUStringView message) {
  if (!t_build_errors) return false;
  if (!t_build_errors->empty()) *t_build_errors += "\n";
  *t_build_errors += (type == WGPUErrorType_OutOfMemory ? "out of memory: " : "") + to_std(message);
  return true;
}

// Contexts whose workers run, for the exit handler (never freed: it may run during static
// destruction).
namespace {
#if SURFGRAD_HOST_HAS_THREADS
std::atomic<int> g_live_workers{0};
std::mutex& running_mutex() {
  static std::mutex& m = *new std::mutex;
  return m;
}
std::vector<KernelBuilds*>& running() {
  static auto& v = *new std::vector<KernelBuilds*>;
  return v;
}
// At exit: join the workers of contexts nobody closed (a leaked context, a language binding's
// default one). Runs before the static objects made before the first worker started.
void stop_all_at_exit() {
  std::lock_guard<std::mutex> l(running_mutex());  // a context closing meanwhile waits here
  for (KernelBuilds* b : running()) b->stop_workers();
  running().clear();
}
#endif
}  // namespace

int live_prewarm_workers() {
#if SURFGRAD_HOST_HAS_THREADS
  return g_live_workers.load();
#else
  return 0;
#endif
}

void KernelBuilds::stop() {
#if SURFGRAD_HOST_HAS_THREADS
  {
    std::lock_guard<std::mutex> l(running_mutex());
    auto& v = running();
    v.erase(std::remove(v.begin(), v.end(), this), v.end());
  }
  stop_workers();
#endif
}

void KernelBuilds::stop_workers() {
#if SURFGRAD_HOST_HAS_THREADS
  std::lock_guard<std::mutex> s(stop_mutex);
  std::vector<std::thread> joining;
  {
    std::lock_guard<std::mutex> l(queue_mutex);
    stopping = true;
    queue.clear();  // builds nobody started: nobody can ask for them any more
    ahead = 0;
    joining.swap(workers);
  }
  queue_cv.notify_all();
  for (auto& t : joining) t.join();
#endif
}

// ---- The caches ----------------------------------------------------------------------------
namespace {

// Ends `b` with its kernel, or with the failure being handled (k null: called from a catch
// block), and moves it from the pending builds to the keyed cache.
void finish(Context::Impl& impl, const std::string& fkey, KernelBuild& b, const Kernel* k) {
  {
    platform::LockGuard lock(impl.builds.mutex);
    if (k) {
      // The profiler's name: the key's (a kernel first built from source keeps the entry's).
      if (k->state->label == k->state->entry) k->state->label = b.label;
      impl.keyed_kernels.emplace(fkey, *k);
    }
    impl.builds.pending.erase(fkey);
  }
  complete(b, k);
}

// Builds `b` on this thread; a failure is kept in `b` (for those waiting on it) and thrown.
Kernel run_build(Context::Impl& impl, const std::string& fkey, KernelBuild& b, const std::string& wgsl,
                 bool on_worker) {
  try {
    Kernel k = source_kernel(impl, wgsl, b.entry, b.validated, b.label, on_worker);
    finish(impl, fkey, b, &k);
    return k;
  } catch (...) {
    finish(impl, fkey, b, nullptr);
    throw;
  }
}

// A worker thread: takes queued builds until the context closes.
#if SURFGRAD_HOST_HAS_THREADS
void worker_loop(KernelBuilds& builds) {
  struct Live {
    Live() { ++g_live_workers; }
    ~Live() { --g_live_workers; }
  } live;
  while (true) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> l(builds.queue_mutex);
      builds.queue_cv.wait(l, [&] { return builds.stopping || !builds.queue.empty(); });
      if (builds.stopping) return;
      job = std::move(builds.queue.front());
      builds.queue.pop_front();
      if (builds.ahead > 0) builds.ahead--;
      builds.active++;
    }
    job();
    std::lock_guard<std::mutex> l(builds.queue_mutex);
    builds.active--;
  }
}
#endif

}  // namespace

#if SURFGRAD_HOST_HAS_THREADS
void KernelBuilds::list_for_exit() {
  std::lock_guard<std::mutex> l(running_mutex());
  if (listed_for_exit) return;
  listed_for_exit = true;
  static const bool registered = std::atexit(stop_all_at_exit) == 0;
  (void)registered;
  running().push_back(this);
}

void KernelBuilds::start_workers(bool cpu) {
  if (!workers.empty() || stopping) return;
  // CPU adapters (lavapipe) share the cores with the work itself: one thread; GPUs: up to 8.
  unsigned n = cpu ? 1u : std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  for (unsigned i = 0; i < n; ++i) workers.emplace_back(worker_loop, std::ref(*this));
}
#else
void KernelBuilds::list_for_exit() {}
void KernelBuilds::start_workers(bool) {}
#endif

namespace {
[[maybe_unused]] bool prewarm_off() {  // (unused without threads: nothing is prewarmed there)
  if (api().implementation == WebGpuImplementation::Dawn) return true;  // its device is not thread-safe here
  const char* v = std::getenv("SURFGRAD_PREWARM");
  return v && std::string(v) == "0";
}
}  // namespace

bool prewarm_source(Context::Impl& I, std::string source, std::string entry, bool validated, std::string label) {
#if SURFGRAD_HOST_HAS_THREADS
  if (prewarm_off()) return false;
  I.builds.list_for_exit();
  std::lock_guard<std::mutex> l(I.builds.queue_mutex);
  I.builds.start_workers(I.info.is_cpu);
  if (I.builds.stopping) return false;
  I.builds.queue.push_back(
      [&I, source = std::move(source), entry = std::move(entry), validated, label = std::move(label)] {
        try {
          source_kernel(I, source, entry, validated, label, true, true);
        } catch (...) {
          // dropped: a use of this source builds it again and reports the failure
        }
      });
  I.builds.queue_cv.notify_one();
  {
    platform::LockGuard lock(I.builds.mutex);
    I.builds.prewarmed++;
  }
  return true;
#elif defined(__wasm__)
  if (prewarm_off()) return false;
  try {
    if (!start_source_async(I, source, entry, validated, label, true)) return false;
  } catch (const Error&) {
    return false;  // a use of this source builds it again and reports the failure
  }
  I.builds.prewarmed++;
  return true;
#else
  (void)I, (void)source, (void)entry, (void)validated, (void)label;
  return false;
#endif
}

Kernel Context::kernel(const std::string& source_wgsl, const std::string& entry, bool validated) {
  impl_->check();
  Kernel k = source_kernel(*impl_, source_wgsl, entry, validated, "", false);
  note_use(*impl_, k);
  return k;
}

namespace {
// The keyed cache (Context::kernel(key, ...)): one build per key, a prewarm's taken over or
// waited for.
Kernel keyed_kernel(Context::Impl& I, const std::string& key, const std::function<std::string()>& make_wgsl,
                    const std::string& entry, bool validated) {
  I.check();  // before a build is registered: one that throws here must not leave it pending
  const std::string fkey = full_key(key, validated);
  std::shared_ptr<KernelBuild> b;
  bool mine = false;
  {
    platform::LockGuard lock(I.builds.mutex);
    if (auto it = I.keyed_kernels.find(fkey); it != I.keyed_kernels.end()) return it->second;
    if (auto it = I.builds.pending.find(fkey); it != I.builds.pending.end()) {
      b = it->second;
    } else {
      b = std::make_shared<KernelBuild>();
      b->entry = entry, b->validated = validated, b->label = profile_label(key, entry), b->started = true;
      I.builds.pending.emplace(fkey, b);
      mine = true;
    }
  }
  if (mine) {
    std::string wgsl;
    try {
      wgsl = make_wgsl();
    } catch (...) {
      finish(I, fkey, *b, nullptr);
      throw;
    }
#if defined(__wasm__)
    b->wgsl = wgsl;  // for another export's first use while this one waits (below)
#endif
    return run_build(I, fkey, *b, wgsl, false);
  }
#if SURFGRAD_HOST_HAS_THREADS
  // Another thread's build (a prewarm's, or a concurrent first use): take it over if no worker
  // has started it, else wait for it.
  {
    std::unique_lock<std::mutex> l(b->mutex);
    if (!b->started) {
      b->started = true;
      std::string wgsl = std::move(b->wgsl);
      l.unlock();
      return run_build(I, fkey, *b, wgsl, false);
    }
  }
  return wait_for(I, *b, false);
#elif defined(__wasm__)
  // A prewarm's: its source-level build is under way (source_kernel waits for it). Or another
  // export's first use, suspended while it waits (JSPI): wait on the same source build.
  if (!b->started) {
    b->started = true;
    return run_build(I, fkey, *b, b->wgsl, false);
  }
  return source_kernel(I, b->wgsl, b->entry, b->validated, b->label, false);
#else
  throw Error(ErrorKind::Value, "kernel '" + key + "': a build is pending in a build without threads");
#endif
}
}  // namespace

Kernel Context::kernel(const std::string& key, const std::function<std::string()>& make_wgsl, const std::string& entry,
                       bool validated) {
  Kernel k = keyed_kernel(*impl_, key, make_wgsl, entry, validated);
  note_use(*impl_, k);
  return k;
}

bool Context::prewarm(const std::string& key, std::string wgsl, const std::string& entry, bool validated, bool ahead) {
  (void)ahead;  // (the browser starts every build at once: no queue)
#if SURFGRAD_HOST_HAS_THREADS
  Impl& I = *impl_;
  if (prewarm_off()) return false;
  const std::string fkey = full_key(key, validated);
  auto b = std::make_shared<KernelBuild>();
  b->entry = entry, b->validated = validated, b->label = profile_label(key, entry), b->wgsl = std::move(wgsl);
  {
    platform::LockGuard lock(I.builds.mutex);
    if (I.keyed_kernels.count(fkey) || I.builds.pending.count(fkey)) return false;
    I.builds.pending.emplace(fkey, b);
    I.builds.prewarmed++;
  }
  I.builds.list_for_exit();
  std::lock_guard<std::mutex> l(I.builds.queue_mutex);
  I.builds.start_workers(I.info.is_cpu);
  // Ahead: after the other builds queued ahead, before those queued plainly (FIFO among each).
  auto at = ahead ? I.builds.queue.begin() + std::ptrdiff_t(I.builds.ahead++) : I.builds.queue.end();
  I.builds.queue.insert(at, [&I, fkey, b] {
    std::string wgsl;
    {
      std::lock_guard<std::mutex> l(b->mutex);
      if (b->started) return;  // the first use took it over
      b->started = true;
      wgsl = std::move(b->wgsl);
    }
    try {
      run_build(I, fkey, *b, wgsl, true);
    } catch (...) {
      // kept in b, thrown at first use
    }
  });
  I.builds.queue_cv.notify_one();
  return true;
#elif defined(__wasm__)
  // The browser: the compile starts now on the GPU process's workers (start_async); the first
  // use (keyed_kernel → source_kernel) waits for its answer.
  Impl& I = *impl_;
  if (prewarm_off()) return false;
  const std::string fkey = full_key(key, validated);
  if (I.keyed_kernels.count(fkey) || I.builds.pending.count(fkey)) return false;
  auto b = std::make_shared<KernelBuild>();
  b->entry = entry, b->validated = validated, b->label = profile_label(key, entry);
  try {
    start_source_async(I, wgsl, entry, validated, b->label, true);
  } catch (const Error&) {
    return false;  // the first use builds it and reports the failure
  }
  b->wgsl = std::move(wgsl);
  I.builds.pending.emplace(fkey, b);
  I.builds.prewarmed++;
  return true;
#else
  (void)key, (void)wgsl, (void)entry, (void)validated;
  return false;
#endif
}

int ContextTesting::live_prewarm_workers() { return gpu::live_prewarm_workers(); }

void ContextTesting::wait_for_prewarm(Context& ctx) {
#if SURFGRAD_HOST_HAS_THREADS
  KernelBuilds& b = ctx.impl_->builds;
  while (true) {
    {
      std::lock_guard<std::mutex> l(b.queue_mutex);
      if (b.queue.empty() && b.active == 0) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
#else
  (void)ctx;
#endif
}

size_t Context::kernel_cache_size() const {
  platform::LockGuard lock(impl_->builds.mutex);
  return impl_->kernels.size();
}

}  // namespace surfgrad::gpu
