// Building compute pipelines (pipelines.cpp): the kernel caches, builds shared between threads,
// and prewarming (kernels compiled on worker threads before their first use, issue 35).
// Only src/gpu/*.cpp include this.
#pragma once
#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "platform/host_resources.hpp"
#include "surfgrad/gpu.hpp"
#include "webgpu_api.hpp"

#if SURFGRAD_HOST_HAS_THREADS
#include <condition_variable>
#include <exception>
#include <thread>
#endif
#if defined(__wasm__)
#include <exception>
#endif

namespace surfgrad::gpu {

// wgpu-native keeps one error-scope stack per device: while a scope is open on one thread, an
// error raised on another lands in it. So a scope is opened only while no build on a worker
// thread runs (those catch their errors per thread, capture_build_error), and no worker build
// starts while a scope is open. Writers (scopes) go first: a waiting one holds back new builds.
class ScopeGate {
 public:
  void lock();  // open a scope: waits for running worker builds to end
  void unlock();
  void lock_shared();  // a worker build
  void unlock_shared();
  // How often and how long scopes waited for worker builds (SURFGRAD_PROFILE's start-up lines).
  void waited(uint64_t& times, double& ms);

 private:
  uint64_t waits_ = 0;
  double wait_ms_ = 0;
#if SURFGRAD_HOST_HAS_THREADS
  std::mutex mutex_;
  std::condition_variable cv_;
  int readers_ = 0, writers_waiting_ = 0;
  bool writer_ = false;
#endif
};

// Holds a gate exclusively (when `on`) while error scopes are open; release() or the end of the
// scope lets builds go on.
class ScopeGuard {
 public:
  ScopeGuard(ScopeGate& gate, bool on) : gate_(on ? &gate : nullptr) {
    if (gate_) gate_->lock();
  }
  ~ScopeGuard() { release(); }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
  void release() {
    if (gate_) gate_->unlock();
    gate_ = nullptr;
  }

 private:
  ScopeGate* gate_;
};

// The browser's build of one pipeline, under way on the GPU process's workers (pipelines.cpp).
struct AsyncBuild;

// One kernel being built (or built): what a second asker waits on instead of compiling again.
struct KernelBuild {
#if SURFGRAD_HOST_HAS_THREADS
  std::mutex mutex;
  std::condition_variable cv;
  std::exception_ptr error;  // the build's failure, rethrown at first use
#endif
  // What it builds (a prewarm's source waits here until a worker or the first use takes it).
  std::string wgsl, entry, label;
  bool validated = false;
  bool started = false;  // a thread took it (guarded by `mutex`)
  bool done = false;
  Kernel kernel;
#if defined(__wasm__)
  // The browser (source-level builds): the compile started (createComputePipelineAsync), and
  // its failure, thrown at every use.
  std::shared_ptr<AsyncBuild> async;
  std::exception_ptr error;
#endif
};

struct KernelState;

struct KernelBuilds {
  ScopeGate gate;
  platform::Mutex mutex;  // guards the maps below and Impl::kernels / keyed_kernels
  std::unordered_map<std::string, std::shared_ptr<KernelBuild>> pending;  // by full key
  // Sources being compiled (Impl::kernels' key): a second thread asking for one waits for it.
  std::unordered_map<std::string, std::shared_ptr<KernelBuild>> source_pending;
  // The kernels a recorded run used (Context::begin_kernel_record; kernel_record.cpp), in the
  // order of their first use; `on` and `epoch` are read without the mutex on the hot path.
  struct Record {
    std::atomic<bool> on{false};
    std::atomic<uint64_t> epoch{0};
    int depth = 0;
    std::string name;
    std::vector<std::shared_ptr<KernelState>> used;
  } record;
  uint64_t prewarmed = 0, prewarm_waits = 0;  // prewarm() calls queued; first uses that waited on one
  double prewarm_wait_ms = 0;                 // the main thread's wait on them
#if SURFGRAD_HOST_HAS_THREADS
  // The worker threads (started by the first prewarm) and their queue.
  std::mutex queue_mutex;
  std::condition_variable queue_cv;
  std::deque<std::function<void()>> queue;
  size_t ahead = 0;  // builds at the queue's front queued `ahead` (Context::prewarm), in their order
  std::vector<std::thread> workers;
  int active = 0;  // jobs a worker took and has not finished
  bool stopping = false;
  bool listed_for_exit = false;  // in the exit handler's list (guarded by its mutex)
  std::mutex stop_mutex;         // a second stop() waits for the first one's joins
#endif
  // Puts these builds on the exit handler's list (once). Called before queue_mutex is taken:
  // the handler holds the list's mutex while it takes queue_mutex (stop_workers), so taking
  // them the other way round could deadlock a context starting its workers during exit.
  void list_for_exit();
  // Starts the workers if none run yet (the caller holds queue_mutex); `cpu`: one thread only.
  void start_workers(bool cpu);
  // Joins the workers (builds not started are dropped): before the device goes, and at process
  // exit for contexts never closed (an atexit handler; a worker must not be building while the
  // process's static objects and the implementation's library go away).
  void stop();
  void stop_workers();  // stop() without leaving the exit handler's list (the handler's own call)
  ~KernelBuilds() { stop(); }
};

// Worker threads of all contexts now running (tests: none after exit's handler ran).
int live_prewarm_workers();

// Queues `source` (as recorded: kernel_record.cpp) on the workers; nothing is waited for and a
// failure is dropped (a use of the same source builds and reports it). False where prewarming
// does nothing.
bool prewarm_source(Context::Impl& impl, std::string source, std::string entry, bool validated, std::string label);

// Natively under wgpu-native, which calls the uncaptured-error callback on the thread that
// raised the error: builds and allocations catch their errors per thread (ThreadErrors) instead of
// opening error scopes. Dawn and the browser: false.
bool errors_caught_per_thread();
// While one lives, the errors this thread raises are appended to `into` (not the context's).
class ThreadErrors {
 public:
  explicit ThreadErrors(std::string* into);
  ~ThreadErrors();
  ThreadErrors(const ThreadErrors&) = delete;
  ThreadErrors& operator=(const ThreadErrors&) = delete;

 private:
  std::string* previous_;
};

// From the device's uncaptured-error callback: true when the error was raised by a worker
// thread's build (recorded for it, not made the context's sticky error).
bool capture_build_error(WGPUErrorType type, WGPUStringView message);

}  // namespace surfgrad::gpu
