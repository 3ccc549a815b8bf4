// What the host gives this process: memory and a lock. The one place that differs between a
// native build (Linux, /proc, getrusage) and the WebAssembly build (wasm32-wasi, one linear
// memory of at most 4 GiB, no threads), so the layers above need no #ifdefs.
#pragma once
#include <cstdint>

// WebAssembly (wasm32-wasi): no threads, and no file system in the browser (its libc++ has no
// <fstream>); files arrive as bytes from JavaScript instead.
#if defined(__wasi__)
#define SURFGRAD_HOST_HAS_THREADS 0
#define SURFGRAD_HOST_HAS_FILES 0
#else
#define SURFGRAD_HOST_HAS_THREADS 1
#define SURFGRAD_HOST_HAS_FILES 1
#include <mutex>
#endif

namespace surfgrad::platform {

// Memory the host can still give this process (MemAvailable natively; the rest of the 4 GiB
// linear memory in WebAssembly); 0 where unknown.
uint64_t host_available_bytes();

// The most memory this process may ever hold: physical RAM or the address-space limit
// (ulimit -v) natively; 4 GiB in WebAssembly.
uint64_t host_memory_limit();

// The process's peak resident memory (natively getrusage's maxrss; in WebAssembly the linear
// memory's size, which never shrinks); 0 where unknown.
uint64_t host_peak_resident_bytes();

#if SURFGRAD_HOST_HAS_THREADS
using Mutex = std::mutex;
template <typename M>
using LockGuard = std::lock_guard<M>;
#else
// WebAssembly without threads: nothing runs concurrently, so locking is a no-op.
struct Mutex {
  void lock() {}
  void unlock() {}
};
template <typename M>
struct LockGuard {
  explicit LockGuard(M&) {}
};
#endif

}  // namespace surfgrad::platform
