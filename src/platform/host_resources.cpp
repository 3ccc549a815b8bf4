#include "platform/host_resources.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#if defined(__wasi__)
#else
#include <sys/resource.h>
#include <unistd.h>
#endif

namespace surfgrad::platform {

#if defined(__wasi__)

namespace {
constexpr uint64_t kLinearMemoryLimit = uint64_t(1) << 32;  // wasm32: 65,536 pages of 64 KiB
uint64_t linear_memory_bytes() { return uint64_t(__builtin_wasm_memory_size(0)) * 65536; }
}  // namespace

uint64_t host_available_bytes() { return kLinearMemoryLimit - linear_memory_bytes(); }
uint64_t host_memory_limit() { return kLinearMemoryLimit; }
uint64_t host_peak_resident_bytes() { return linear_memory_bytes(); }

#else

uint64_t host_available_bytes() {
  // /proc/meminfo's MemAvailable counts reclaimable caches, which sysconf's free pages do not.
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char key[64];
    unsigned long long kib = 0;
    char unit[16];
    while (std::fscanf(f, "%63s %llu %15s", key, &kib, unit) == 3)
      if (std::strcmp(key, "MemAvailable:") == 0) {
        std::fclose(f);
        return uint64_t(kib) * 1024;
      }
    std::fclose(f);
  }
#if defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
  long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return uint64_t(pages) * uint64_t(page);
#endif
  return 0;
}

uint64_t host_memory_limit() {
  constexpr uint64_t kMax63 = uint64_t(INT64_MAX);
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  uint64_t ram = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : kMax63;
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) ram = std::min<uint64_t>(ram, as.rlim_cur);
  return ram;
}

uint64_t host_peak_resident_bytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) return uint64_t(usage.ru_maxrss) * 1024;  // KiB on Linux
  return 0;
}

#endif

}  // namespace surfgrad::platform
