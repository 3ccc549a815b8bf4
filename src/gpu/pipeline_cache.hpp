// Compiled pipelines kept across runs (issue 35): an on-disk blob store that a WebGPU
// implementation fills with what it compiled and reads back in the next process.
//
// Who can use it, through the C API surfgrad calls (checked with `nm -D` and the headers):
//   Dawn          yes: WGPUDawnCacheDeviceDescriptor, chained into the device descriptor, hands
//                 Dawn a load and a store function; Dawn keeps Tint's SPIR-V and each pipeline's
//                 VkPipelineCache data in it (its "blob cache", the one Chromium backs with disk).
//   wgpu-native   no: wgpu-native 29 exports no wgpuDeviceCreatePipelineCache (only the feature
//                 enum WGPUNativeFeature_PipelineCache in wgpu.h); the driver's own disk cache is
//                 what remains (Mesa's for lavapipe, NVIDIA's ~/.cache/nvidia), left enabled.
//   the browser   the browser's own cache (Chromium keeps Dawn's per profile).
//
// Where: SURFGRAD_PIPELINE_CACHE=DIR, else $XDG_CACHE_HOME/surfgrad/pipelines, else
// ~/.cache/surfgrad/pipelines (beside the matmul tuning cache); SURFGRAD_PIPELINE_CACHE=0 (or
// off) turns it off. One file per entry, named by a hash of scope and key, holding both in full
// with the value's length and checksum: an entry of another adapter, driver or implementation
// version (the scope), a truncated or corrupt file, or one that cannot be read is a miss, never
// an error. Entries are written to a temporary name and renamed, so a reader never sees half of
// one; a folder that cannot be written only means nothing is kept.
#pragma once

#include <webgpu/webgpu.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "platform/host_resources.hpp"
#include "surfgrad/gpu.hpp"

namespace surfgrad::gpu {

// The folder from SURFGRAD_PIPELINE_CACHE / XDG_CACHE_HOME / HOME; "" when turned off (or, in
// the browser build, where there is no file system).
std::string pipeline_cache_dir();

struct BlobStoreStats {
  uint64_t hits = 0, misses = 0, rejected = 0, stores = 0, store_failures = 0;
  std::string last_failure;  // why the last store failed (a read-only folder, a full disk)
};

// One store per (folder, scope); thread-safe (Dawn may call it from its worker threads).
class BlobStore {
 public:
  BlobStore(std::string dir, std::string scope) : dir_(std::move(dir)), scope_(std::move(scope)) {}
  // Dawn's protocol: called with value == nullptr (or value_size 0) for the size, then with a
  // buffer of that size; returns the entry's size, 0 for a miss (or a buffer of the wrong size).
  size_t load(const void* key, size_t key_size, void* value, size_t value_size);
  void store(const void* key, size_t key_size, const void* value, size_t value_size);
  BlobStoreStats stats() const;
  const std::string& dir() const { return dir_; }
  // The file an entry lives in (tests corrupt it).
  std::string path_for(const std::string& key) const;

 private:
  bool read_entry(const std::string& key, std::vector<uint8_t>& out);
  std::string dir_, scope_;
  mutable platform::Mutex mutex_;
  std::map<std::string, std::vector<uint8_t>> pending_;  // read at the size query, handed over at the second call
  BlobStoreStats stats_;
  [[maybe_unused]] bool dir_made_ = false;  // (unused in the browser build, which keeps nothing)
  [[maybe_unused]] uint64_t temp_counter_ = 0;
};

// What an entry is valid for: adapter, driver, backend, implementation and its version, and
// the implementation's library file (size and modification time: a rebuilt Dawn of the same
// name must not read another build's blobs).
std::string pipeline_cache_scope(const AdapterInfo& info);

// The process's store for a scope under pipeline_cache_dir() (null when turned off). Stores
// live until the process ends: the implementation may call them until its device is gone.
BlobStore* pipeline_blob_store(const std::string& scope);

// WGPUDawnCacheDeviceDescriptor (Dawn's C ABI as of 2026, dawn.json "dawn cache device
// descriptor"; sType 0x00050007, three before DawnTogglesDescriptor's 0x0005000A in
// dawn_abi.hpp): chained into the device descriptor. Its load and store functions come as
// callback infos (a chain pointer, the function, two userdata); Dawn calls load twice per lookup
// (size, then data) and store after it compiled something; isolationKey keeps devices apart.
namespace dawn {
constexpr uint32_t kSTypeCacheDeviceDescriptor = 0x00050007;
struct LoadCacheDataCallbackInfo {
  WGPUChainedStruct* nextInChain;
  size_t (*callback)(size_t keySize, const uint8_t* key, size_t valueSize, uint8_t* value, void* userdata1,
                     void* userdata2);
  void* userdata1;
  void* userdata2;
};
struct StoreCacheDataCallbackInfo {
  WGPUChainedStruct* nextInChain;
  void (*callback)(size_t keySize, const uint8_t* key, size_t valueSize, const uint8_t* value, void* userdata1,
                   void* userdata2);
  void* userdata1;
  void* userdata2;
};
struct CacheDeviceDescriptor {
  WGPUChainedStruct chain;
  WGPUStringView isolationKey;
  LoadCacheDataCallbackInfo load;
  StoreCacheDataCallbackInfo store;
};
}  // namespace dawn

// `out` filled to give Dawn `store` as its blob cache, chained ahead of `next`; returns the chain
// to hand the device descriptor: &out.chain under Dawn with a store, else `next` unchanged.
// `isolation_key` must outlive the device request.
WGPUChainedStruct* dawn_cache_chain(BlobStore* store, const std::string& isolation_key, WGPUChainedStruct* next,
                                    dawn::CacheDeviceDescriptor& out);

}  // namespace surfgrad::gpu
