// Host work split over the machine's cores: natively one std::thread per part; in WebAssembly,
// which has no threads, the parts run one after another in the calling thread. Callers split
// their work so that the result does not depend on how many parts there are.
#pragma once
#include <cstdint>
#include <functional>

namespace surfgrad::platform {

// How many parts host loops split into: the hardware's threads (at most 32); 1 without threads.
int host_threads();

// fn(part) for every part in [0, parts), concurrently where the host has threads (the calling
// thread runs part 0); returns when all are done. fn must not throw.
void parallel_parts(int parts, const std::function<void(int part)>& fn);

// The half-open range of [0, n) that part `part` of `parts` owns (contiguous, in order).
inline int64_t part_begin(int64_t n, int part, int parts) { return n * part / parts; }

}  // namespace surfgrad::platform
