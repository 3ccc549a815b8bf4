// SURFGRAD_PROFILE: GPU time per kernel (gpu.hpp, Context::profile_table).
//
// Where the adapter has timestamp queries, each dispatch gets a compute pass of its own whose
// beginning and end are timestamped (commands.cpp opens it). The timestamps are resolved and read
// back whenever the query set fills (2,048 dispatches), and when a table is asked for; each pass's time is added to
// its kernel's label. Separate passes stop the GPU overlapping consecutive dispatches, so the
// sum is larger than the unprofiled run's time, but each kernel's share is what it costs.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "impl.hpp"
#include "pipeline_cache.hpp"

namespace surfgrad::gpu {

std::string profile_label(const std::string& key, const std::string& entry) {
  std::string label = key.rfind("file|", 0) == 0 ? key.substr(5) : key;
  const std::string middle = "|" + entry + "|", last = "|" + entry;
  if (size_t at = label.find(middle); at != std::string::npos)
    label.replace(at, middle.size(), "|");
  else if (label.size() >= last.size() && label.compare(label.size() - last.size(), last.size(), last) == 0)
    label.erase(label.size() - last.size());
  if (size_t nl = label.find('\n'); nl != std::string::npos) label = label.substr(0, nl) + "...";  // generated code
  if (label.size() > 72) label = label.substr(0, 69) + "...";
  return label;
}

void Context::profile_before_dispatch(const Kernel& kernel) {
  Impl& I = *impl_;
  I.close_pass();
  if (I.profile.used + 2 > I.profile.capacity) profile_collect();
  I.profile.next = kernel.state.get();
}

void Context::profile_collect() {
  Impl& I = *impl_;
  uint32_t used = I.profile.used;
  if (!I.profile.on || used == 0) return;
  I.profile.used = 0;  // the read below submits; later dispatches start a fresh set
  double period = 0;
  std::vector<uint64_t> stamps = read_timestamps(true, used, &period);
  for (size_t p = 0; p < I.profile.pending.size() && 2 * p + 1 < stamps.size(); ++p) {
    auto& [count, ns] = I.profile.totals[I.profile.pending[p]];
    ++count;
    if (stamps[2 * p + 1] > stamps[2 * p]) ns += double(stamps[2 * p + 1] - stamps[2 * p]) * period;
  }
  I.profile.pending.clear();
}

std::string Context::profile_table() {
  Impl& I = *impl_;
  if (!I.profile.on) return "";
  profile_collect();
  std::vector<std::pair<std::string, std::pair<uint64_t, double>>> rows(I.profile.totals.begin(),
                                                                        I.profile.totals.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  double total = 0;
  uint64_t dispatches = 0;
  for (const auto& r : rows) total += r.second.second, dispatches += r.second.first;
  std::string out = "surfgrad profile on " + I.info.name + ": GPU time per kernel, one pass per dispatch\n";
  char line[256];
  std::snprintf(line, sizeof line, "%12s %10s %12s %7s  %s\n", "dispatches", "total ms", "µs each", "share", "kernel");
  out += line;
  for (const auto& [label, v] : rows) {
    std::snprintf(line, sizeof line, "%12llu %10.3f %12.2f %6.1f%%  %s\n", static_cast<unsigned long long>(v.first),
                  v.second / 1e6, v.first ? v.second / 1e3 / double(v.first) : 0.0,
                  total > 0 ? 100 * v.second / total : 0.0, label.c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "%12llu %10.3f %12s %7s  all kernels\n", static_cast<unsigned long long>(dispatches),
                total / 1e6, "", "");
  out += line;
  out += startup_table();
  return out;
}

Context::StartupStats Context::startup_stats() const {
  const Impl& I = *impl_;
  StartupStats s;
  s.instance_ms = I.instance_ms, s.adapters_ms = I.adapters_ms, s.device_ms = I.device_ms;
  {
    platform::LockGuard lock(impl_->builds.mutex);  // prewarm's workers add kernels
    for (const auto& [key, k] : I.kernels) {
      ++s.pipelines, s.module_ms += k.state->module_ms, s.pipeline_ms += k.state->pipeline_ms;
      if (k.state->at_use) ++s.built_at_use, s.at_use_ms += k.state->module_ms + k.state->pipeline_ms;
    }
    s.prewarmed = I.builds.prewarmed, s.prewarm_waits = I.builds.prewarm_waits;
    s.prewarm_wait_ms = I.builds.prewarm_wait_ms;
    std::vector<const KernelState*> at_use;
    for (const auto& [key, k] : I.kernels)
      if (k.state->at_use) at_use.push_back(k.state.get());
    std::sort(at_use.begin(), at_use.end(),
              [](const KernelState* a, const KernelState* b) { return a->created_ms < b->created_ms; });
    for (const KernelState* k : at_use) s.built_at_use_labels.push_back(k->label);
  }
  if (I.pipeline_store) {
    BlobStoreStats b = I.pipeline_store->stats();
    s.pipeline_cache_dir = I.pipeline_store->dir();
    s.cache_hits = b.hits, s.cache_misses = b.misses, s.cache_stores = b.stores, s.cache_rejected = b.rejected;
    s.cache_store_failures = b.store_failures;
  }
  return s;
}

// The cold-start part of the profile: context creation and every pipeline created, slowest
// first (wall time on the host, not GPU time; the ten slowest by name).
std::string Context::startup_table() const {
  const StartupStats s = startup_stats();
  std::vector<const KernelState*> made;
  {
    platform::LockGuard lock(impl_->builds.mutex);
    for (const auto& [key, k] : impl_->kernels) made.push_back(k.state.get());
  }
  std::sort(made.begin(), made.end(), [](const KernelState* a, const KernelState* b) {
    return a->module_ms + a->pipeline_ms > b->module_ms + b->pipeline_ms;
  });
  char line[256];
  std::string out;
  std::snprintf(line, sizeof line, "start-up: instance %.1f ms, adapters %.1f ms, device %.1f ms\n", s.instance_ms,
                s.adapters_ms, s.device_ms);
  out += line;
  std::snprintf(line, sizeof line, "pipelines: %zu created in %.1f ms (shader modules %.1f ms, pipelines %.1f ms)\n",
                s.pipelines, s.module_ms + s.pipeline_ms, s.module_ms, s.pipeline_ms);
  out += line;
  if (s.prewarmed) {
    uint64_t scope_waits = 0;
    double scope_ms = 0;
    impl_->builds.gate.waited(scope_waits, scope_ms);
    std::snprintf(line, sizeof line,
                  "prewarm: %llu built on worker threads ahead of use; %llu first uses waited %.1f ms for one; "
                  "error scopes (allocations, builds) waited %.1f ms for worker builds %llu times\n",
                  static_cast<unsigned long long>(s.prewarmed), static_cast<unsigned long long>(s.prewarm_waits),
                  s.prewarm_wait_ms, scope_ms, static_cast<unsigned long long>(scope_waits));
    out += line;
  }
  if (s.built_at_use) {
    // What still compiles on the critical path, in the order it was built (the labels say which
    // op asked; cold start, issue 35).
    std::sort(made.begin(), made.end(),
              [](const KernelState* a, const KernelState* b) { return a->created_ms < b->created_ms; });
    std::snprintf(line, sizeof line, "at first use: %zu built by the asking thread in %.1f ms:", s.built_at_use,
                  s.at_use_ms);
    out += line;
    for (const KernelState* k : made)
      if (k->at_use) out += " " + k->label.substr(0, 60) + ";";
    out += "\n";
    std::sort(made.begin(), made.end(), [](const KernelState* a, const KernelState* b) {
      return a->module_ms + a->pipeline_ms > b->module_ms + b->pipeline_ms;
    });
  }
  if (impl_->pipeline_store) {
    BlobStoreStats b = impl_->pipeline_store->stats();
    out += "pipeline cache: " + s.pipeline_cache_dir + " (Dawn's blob cache): " + std::to_string(b.hits) + " hits, " +
           std::to_string(b.misses) + " misses, " + std::to_string(b.stores) + " stored, " +
           std::to_string(b.rejected) + " rejected" +
           (b.store_failures ? ", " + std::to_string(b.store_failures) + " not stored (" + b.last_failure + ")" : "") +
           "\n";
  } else if (api().implementation == WebGpuImplementation::Dawn) {
    out += "pipeline cache: off (SURFGRAD_PIPELINE_CACHE=0, or no HOME)\n";
  } else {
    out += "pipeline cache: none (wgpu-native's C API has no pipeline cache; the driver's own disk cache applies)\n";
  }
  std::snprintf(line, sizeof line, "%12s %12s  %s\n", "module ms", "pipeline ms", "kernel (slowest 10)");
  out += line;
  for (size_t i = 0; i < made.size() && i < 10; ++i) {
    std::snprintf(line, sizeof line, "%12.2f %12.2f  %s\n", made[i]->module_ms, made[i]->pipeline_ms,
                  made[i]->label.c_str());
    out += line;
  }
  return out;
}

void Context::write_profile() {
  Impl& I = *impl_;
  if (!I.profile.on || I.profile.written) return;
  I.profile.written = true;
  std::string table;
  try {
    table = profile_table();
  } catch (const std::exception& e) {
    throw Error(ErrorKind::Device, std::string("SURFGRAD_PROFILE: the profile could not be read back: ") + e.what());
  }
  const std::string& path = I.profile.report_path;
  if (path.empty()) {
    std::fputs(table.c_str(), stderr);
    return;
  }
  // Checked through the final close: a full disk or /dev/full fails only when the data leave.
  errno = 0;
  std::FILE* f = std::fopen(path.c_str(), "w");
  bool ok = f && std::fputs(table.c_str(), f) >= 0 && std::fflush(f) == 0 && !std::ferror(f);
  int err = errno;
  if (f && std::fclose(f) != 0 && ok) ok = false, err = errno;
  if (ok) return;
  std::fputs(table.c_str(), stderr);  // the measurements are not lost
  throw Error(ErrorKind::IO, "SURFGRAD_PROFILE='" + path + "': cannot write the profile (" +
                                 (err ? std::strerror(err) : "unknown error") +
                                 "; it is printed above); set SURFGRAD_PROFILE to a writable file, or to 1 for stderr");
}

}  // namespace surfgrad::gpu
