// See parallel.hpp.
#include "platform/parallel.hpp"

#include <algorithm>
#include <vector>

#include "platform/host_resources.hpp"

#if SURFGRAD_HOST_HAS_THREADS
#include <thread>
#endif

namespace surfgrad::platform {

int host_threads() {
#if SURFGRAD_HOST_HAS_THREADS
  return int(std::clamp(std::thread::hardware_concurrency(), 1u, 32u));
#else
  return 1;
#endif
}

void parallel_parts(int parts, const std::function<void(int part)>& fn) {
#if SURFGRAD_HOST_HAS_THREADS
  std::vector<std::thread> threads;
  for (int p = 1; p < parts; ++p) threads.emplace_back(fn, p);
  if (parts > 0) fn(0);
  for (std::thread& t : threads) t.join();
#else
  for (int p = 0; p < parts; ++p) fn(p);
#endif
}

}  // namespace surfgrad::platform
