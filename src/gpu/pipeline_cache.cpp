// The on-disk pipeline cache (pipeline_cache.hpp): folder, entry files, Dawn's descriptor.
#include "pipeline_cache.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "webgpu_api.hpp"

#if SURFGRAD_HOST_HAS_FILES
#include <unistd.h>

#include <filesystem>
#endif

namespace surfgrad::gpu {

namespace {
uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
}  // namespace

#if SURFGRAD_HOST_HAS_FILES
namespace {

// An entry file: magic, then scope, key and value each as a u64 length and the bytes, the
// value's FNV-1a hash before the value. Lengths are checked against the file's size before
// anything is allocated, so a corrupt length cannot ask for gigabytes.
constexpr char kMagic[16] = "surfgrad-pcache";  // 15 characters and the NUL: 16 bytes, format 1
constexpr uint64_t kMaxEntryBytes = uint64_t(256) << 20;

void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

// Reads a u64 at `at` if 8 bytes remain.
bool get_u64(const std::vector<uint8_t>& in, size_t& at, uint64_t& v) {
  if (in.size() - at < 8) return false;
  v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(in[at + i]) << (8 * i);
  at += 8;
  return true;
}

bool get_bytes(const std::vector<uint8_t>& in, size_t& at, std::string& out) {
  uint64_t n = 0;
  if (!get_u64(in, at, n) || n > in.size() - at) return false;
  out.assign(reinterpret_cast<const char*>(in.data() + at), size_t(n));
  at += size_t(n);
  return true;
}

}  // namespace
#endif

std::string pipeline_cache_dir() {
#if !SURFGRAD_HOST_HAS_FILES
  return "";
#else
  if (const char* p = std::getenv("SURFGRAD_PIPELINE_CACHE")) {
    std::string v = p;
    if (v == "0" || v == "off" || v == "false" || v == "no") return "";
    if (!v.empty()) return v;
  }
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    base = x;
  else if (const char* h = std::getenv("HOME"); h && *h)
    base = std::string(h) + "/.cache";
  else
    return "";  // nowhere sensible: keep nothing rather than litter the working directory
  return base + "/surfgrad/pipelines";
#endif
}

std::string BlobStore::path_for(const std::string& key) const {
  char name[40];
  std::snprintf(name, sizeof name, "/%016llx.bin",
                static_cast<unsigned long long>(fnv1a(key.data(), key.size(), fnv1a(scope_.data(), scope_.size()))));
  return dir_ + name;
}

bool BlobStore::read_entry(const std::string& key, std::vector<uint8_t>& out) {
#if !SURFGRAD_HOST_HAS_FILES
  (void)key, (void)out;
  return false;
#else
  std::FILE* f = std::fopen(path_for(key).c_str(), "rb");
  if (!f) return false;  // no entry: a plain miss
  std::vector<uint8_t> file;
  bool ok = std::fseek(f, 0, SEEK_END) == 0;
  long size = ok ? std::ftell(f) : -1;
  ok = ok && size >= 0 && uint64_t(size) <= kMaxEntryBytes && std::fseek(f, 0, SEEK_SET) == 0;
  if (ok) {
    file.resize(size_t(size));
    ok = std::fread(file.data(), 1, file.size(), f) == file.size();
  }
  std::fclose(f);
  size_t at = sizeof kMagic;
  std::string scope, stored_key;
  uint64_t value_size = 0, hash = 0;
  ok = ok && file.size() >= sizeof kMagic && std::memcmp(file.data(), kMagic, sizeof kMagic) == 0 &&
       get_bytes(file, at, scope) && get_bytes(file, at, stored_key) && get_u64(file, at, value_size) &&
       get_u64(file, at, hash) && value_size == file.size() - at;
  if (!ok) {
    ++stats_.rejected;  // truncated, corrupt or of another format
    return false;
  }
  if (scope != scope_ || stored_key != key) return false;  // another adapter's, or a hash collision
  if (fnv1a(file.data() + at, size_t(value_size)) != hash) {
    ++stats_.rejected;
    return false;
  }
  out.assign(file.begin() + long(at), file.end());
  return true;
#endif
}

size_t BlobStore::load(const void* key_data, size_t key_size, void* value, size_t value_size) {
  std::string key(static_cast<const char*>(key_data), key_size);
  platform::LockGuard lock(mutex_);
  if (!value || value_size == 0) {
    std::vector<uint8_t> entry;
    if (!read_entry(key, entry) || entry.empty()) {
      ++stats_.misses;
      return 0;
    }
    size_t n = entry.size();
    pending_[key] = std::move(entry);
    return n;
  }
  auto it = pending_.find(key);
  std::vector<uint8_t> entry;
  if (it != pending_.end()) {
    entry = std::move(it->second);
    pending_.erase(it);
  } else if (!read_entry(key, entry)) {
    ++stats_.misses;
    return 0;
  }
  if (entry.size() != value_size) {  // changed between the two calls: a miss, not a short copy
    ++stats_.misses;
    return 0;
  }
  std::memcpy(value, entry.data(), entry.size());
  ++stats_.hits;
  return entry.size();
}

void BlobStore::store(const void* key_data, size_t key_size, const void* value, size_t value_size) {
#if !SURFGRAD_HOST_HAS_FILES
  (void)key_data, (void)key_size, (void)value, (void)value_size;
#else
  std::string key(static_cast<const char*>(key_data), key_size);
  std::vector<uint8_t> file(kMagic, kMagic + sizeof kMagic);
  put_u64(file, scope_.size());
  file.insert(file.end(), scope_.begin(), scope_.end());
  put_u64(file, key.size());
  file.insert(file.end(), key.begin(), key.end());
  put_u64(file, value_size);
  put_u64(file, fnv1a(value, value_size));
  const auto* v = static_cast<const uint8_t*>(value);
  file.insert(file.end(), v, v + value_size);
  platform::LockGuard lock(mutex_);
  auto fail = [&](const std::string& why) {
    ++stats_.store_failures;
    stats_.last_failure = why;
  };
  if (file.size() > kMaxEntryBytes) return fail("an entry of " + std::to_string(file.size()) + " bytes");
  if (!dir_made_) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) return fail("cannot create '" + dir_ + "': " + ec.message());
    dir_made_ = true;
  }
  // A temporary name of this process, then a rename: readers see the old entry or the new one.
  const std::string path = path_for(key);
  const std::string temp = path + ".tmp" + std::to_string(long(getpid())) + "-" + std::to_string(temp_counter_++);
  errno = 0;
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  bool ok = f && std::fwrite(file.data(), 1, file.size(), f) == file.size() && std::fflush(f) == 0;
  int err = errno;
  if (f && std::fclose(f) != 0 && ok) ok = false, err = errno;
  if (ok && std::rename(temp.c_str(), path.c_str()) != 0) ok = false, err = errno;
  if (!ok) {
    std::remove(temp.c_str());
    return fail("cannot write '" + path + "': " + (err ? std::strerror(err) : "unknown error"));
  }
  ++stats_.stores;
#endif
}

BlobStoreStats BlobStore::stats() const {
  platform::LockGuard lock(mutex_);
  return stats_;
}

std::string pipeline_cache_scope(const AdapterInfo& info) {
  std::string scope = info.name + " | " + info.driver + " | " + info.backend + " | " + info.implementation;
#if SURFGRAD_HOST_HAS_FILES
  if (const std::string& lib = api().library; !lib.empty()) {
    std::error_code ec;
    auto size = std::filesystem::file_size(lib, ec);
    auto when = std::filesystem::last_write_time(lib, ec);
    if (!ec)
      scope += " | " + std::to_string(size) + " bytes, written " + std::to_string(when.time_since_epoch().count());
  }
#endif
  return scope;
}

BlobStore* pipeline_blob_store(const std::string& scope) {
  const std::string dir = pipeline_cache_dir();
  if (dir.empty()) return nullptr;
  // Never freed: the implementation may call a store until its last device is gone, which can
  // be during static destruction.
  static platform::Mutex& m = *new platform::Mutex;
  static auto& stores = *new std::map<std::pair<std::string, std::string>, BlobStore*>;
  platform::LockGuard lock(m);
  BlobStore*& s = stores[{dir, scope}];
  if (!s) s = new BlobStore(dir, scope);
  return s;
}

WGPUChainedStruct* dawn_cache_chain(BlobStore* store, const std::string& isolation_key, WGPUChainedStruct* next,
                                    dawn::CacheDeviceDescriptor& out) {
  if (!store || api().implementation != WebGpuImplementation::Dawn) return next;
  out = {};
  out.chain.next = next;
  out.chain.sType = static_cast<WGPUSType>(dawn::kSTypeCacheDeviceDescriptor);
  out.isolationKey = {isolation_key.data(), isolation_key.size()};
  out.load.callback = [](size_t key_size, const uint8_t* key, size_t value_size, uint8_t* value, void* ud,
                         void*) -> size_t {
    try {
      return static_cast<BlobStore*>(ud)->load(key, key_size, value, value_size);
    } catch (...) {  // never an exception into Dawn (out of memory): a miss
      return 0;
    }
  };
  out.load.userdata1 = store;
  out.store.callback = [](size_t key_size, const uint8_t* key, size_t value_size, const uint8_t* value, void* ud,
                          void*) {
    try {
      static_cast<BlobStore*>(ud)->store(key, key_size, value, value_size);
    } catch (...) {  // nothing kept
    }
  };
  out.store.userdata1 = store;
  return &out.chain;
}

}  // namespace surfgrad::gpu
