// Recording and submitting work: buffers in and out, kernels, dispatches, copies, timing.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <thread>
#include <tuple>

#include "impl.hpp"
#include "queue_wait.hpp"
#include "testing.hpp"

namespace surfgrad::gpu {

namespace {
constexpr uint64_t kMetaChunkBytes = 64 * 1024;
constexpr uint64_t kMaxDispatchesPerBatch = 1024;  // bounds memory held by one pending batch
constexpr uint32_t kMaxTimedPasses = 2048;
constexpr uint64_t kMetaWords = 256;
constexpr size_t kMaxCachedBindGroups = 4096;  // cached bind groups keep their buffers alive

std::string human_bytes(uint64_t b) {
  char buf[64];
  if (b >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(b) / double(1ull << 30));
  else if (b >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.2f MiB", double(b) / double(1ull << 20));
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(b));
  return buf;
}

}  // namespace

// Pops one error scope and waits for its answer (impl.hpp).
std::pair<WGPUErrorType, std::string> pop_scope(Context::Impl& impl) {
  if (!impl.defer_label.empty()) return defer_scope(impl);
  CallbackSlot<ScopeAnswer> slot;
  pop_error_scope(impl.device, slot);
  const ScopeAnswer& r = *slot.state;
  // Until the answer comes: no cap on the spins (an unanswered scope read as "no error" would
  // hide one), but a lost device ends the wait.
  for (int spins = 0; !r.done; ++spins) {
    api().wgpuInstanceProcessEvents(impl.instance);
    if (r.done) break;
    poll(impl.instance, impl.device, spins > 1000);  // block once spinning has not helped
    platform::LockGuard lock(impl.error_mutex);
    if (impl.lost) return {WGPUErrorType_Unknown, "the device was lost: " + impl.lost_message};
  }
  return {r.type, r.message};
}

void Context::Impl::clear_bind_groups() {
  for (auto& [key, group] : bind_groups) api().wgpuBindGroupRelease(group);
  bind_groups.clear();
}

BufferPtr Context::alloc(uint64_t bytes, const std::string& what) {
  impl_->check();
  bytes = std::max<uint64_t>((bytes + 3) / 4 * 4, 4);
  const Limits& L = impl_->limits;
  uint64_t cap = L.largest_binding();
  if (bytes > cap) {
    throw Error(ErrorKind::LimitExceeded,
                what + " needs " + human_bytes(bytes) + " but this adapter (" + impl_->info.name + ") binds at most " +
                    human_bytes(cap) + " per buffer (maxStorageBufferBindingSize " +
                    human_bytes(L.max_storage_buffer_binding_size) + ", maxBufferSize " +
                    human_bytes(L.max_buffer_size) + "); split the work into smaller tensors");
  }
  if (BufferPool::size_class(bytes) > cap) bytes = cap;  // the class may round past the limit
  bool big = bytes >= (1u << 20);
  // A failed allocation is retried once after the pool hands its free buffers back to the
  // device: what the pool keeps for reuse (at 10M points, rounds of descent leave tens of GB
  // of free CSR buffers of other sizes) must not make a tensor that fits fail.
  for (int attempt = 0;; ++attempt) {
    // wgpu-native reports some failed allocations as validation errors ("Not enough memory
    // left", seen at 10M points on an H100): a second scope catches those. Sizes were checked
    // against the limits above, so a validation error here is the allocation failing.
    // Natively under wgpu-native the error reaches this thread's catcher (pipelines.hpp): no
    // scope, so no wait for the workers' kernel builds. Elsewhere no build on another thread may
    // raise an error while the scopes are open.
    const bool per_thread = big && errors_caught_per_thread();
    ScopeGuard scopes(impl_->builds.gate, big && !per_thread);
    std::string caught;
    std::optional<ThreadErrors> catcher;
    if (per_thread) {
      catcher.emplace(&caught);
    } else if (big) {
      api().wgpuDevicePushErrorScope(impl_->device, WGPUErrorFilter_OutOfMemory);
      api().wgpuDevicePushErrorScope(impl_->device, WGPUErrorFilter_Validation);
    }
    bool fresh = false;
    std::shared_ptr<BufferState> state;
    if (BufferPool::size_class(bytes) > cap) {
      // Exactly at the limit: allocate outside the size classes.
      state = std::make_shared<BufferState>();
      WGPUBufferDescriptor desc = WGPU_BUFFER_DESCRIPTOR_INIT;
      desc.usage =
          WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst | WGPUBufferUsage_Indirect;
      desc.size = bytes;
      state->buffer = api().wgpuDeviceCreateBuffer(impl_->device, &desc);
      state->id = next_buffer_id();
      state->capacity = bytes;
    } else {
      state = impl_->pool->acquire(bytes, fresh);
      state->pool = impl_->pool;
    }
    if (big) {
      WGPUErrorType type = WGPUErrorType_NoError;
      std::string message;
      if (per_thread) {
        catcher.reset();
        if (!caught.empty()) type = WGPUErrorType_OutOfMemory, message = caught;
      } else {
        auto [invalid, invalid_message] = pop_scope(*impl_);
        std::tie(type, message) = pop_scope(*impl_);
        scopes.release();
        if (type == WGPUErrorType_NoError && invalid != WGPUErrorType_NoError)
          type = invalid, message = invalid_message;
      }
      if (impl_->failing_allocations > 0 && type == WGPUErrorType_NoError) {
        --impl_->failing_allocations;
        type = WGPUErrorType_OutOfMemory;
        message = "out of memory (a test's)";
      }
      if (type != WGPUErrorType_NoError) {
        state->pool.reset();
        if (state->buffer) api().wgpuBufferRelease(state->buffer);
        state->buffer = nullptr;
        if (attempt == 0 && impl_->pool->stats().pooled_bytes > 0) {
          trim_pool();  // the cached bind groups too: they hold the pooled buffers alive
          continue;
        }
        throw Error(ErrorKind::OutOfMemory, "allocating " + human_bytes(bytes) + " for " + what + " on " +
                                                impl_->info.name + " failed (" + message +
                                                "); free tensors or work in smaller pieces");
      }
    }
    return BufferPtr(new Buffer(std::move(state), bytes));
  }
}

PoolStats Context::pool_stats() const { return impl_->pool->stats(); }
void ContextTesting::fail_allocations(Context& ctx, int count) { ctx.impl_->failing_allocations = count; }

void Context::trim_pool() {
  impl_->clear_bind_groups();  // they hold references to pooled buffers
  impl_->pool->trim();
}

void Context::upload(const Buffer& dst, const void* data, uint64_t bytes, uint64_t offset) {
  impl_->check();
  // queue.writeBuffer runs before any command not yet submitted; if the pending batch uses
  // this buffer (a recycled one, say), submit that batch first so the write lands after it.
  if (dst.state()->last_batch == impl_->batch_id && impl_->encoder) flush();
  uint64_t aligned = bytes / 4 * 4;
  if (aligned) api().wgpuQueueWriteBuffer(impl_->queue, dst.state()->buffer, offset, data, aligned);
  if (aligned != bytes) {  // writeBuffer wants multiples of 4: pad the tail
    uint8_t tail[4] = {0, 0, 0, 0};
    std::memcpy(tail, static_cast<const uint8_t*>(data) + aligned, bytes - aligned);
    api().wgpuQueueWriteBuffer(impl_->queue, dst.state()->buffer, offset + aligned, tail, 4);
  }
}

// A readback: the copy into a mappable staging buffer is submitted and its mapping requested at
// once; wait() polls until the mapping is done. `until_idle`: download()'s wait, which may block
// until all queued work is done (wgpu-native's poll); otherwise poll without blocking, yielding
// the core, so that only the copy is waited for.
struct PendingDownload::State {
  struct Mapped {
    bool done = false;
    WGPUMapAsyncStatus status = WGPUMapAsyncStatus_Error;
    std::string message;
  };
  Context* ctx = nullptr;
  Context::Impl* impl = nullptr;
  WGPUBuffer staging = nullptr;
  uint64_t size = 0, skip = 0, bytes = 0;
  CallbackSlot<Mapped> slot;
  bool until_idle = false;
  ~State() {
    if (staging) api().wgpuBufferRelease(staging);
  }
};

PendingDownload::PendingDownload() = default;
PendingDownload::PendingDownload(PendingDownload&& o) noexcept = default;
PendingDownload& PendingDownload::operator=(PendingDownload&& o) noexcept = default;
PendingDownload::~PendingDownload() = default;

PendingDownload Context::download_later(const Buffer& src, uint64_t bytes, uint64_t offset) {
  impl_->check();
  PendingDownload p;
  p.state_ = std::make_unique<PendingDownload::State>();
  PendingDownload::State& s = *p.state_;
  s.ctx = this, s.impl = impl_.get(), s.bytes = bytes;
  uint64_t start = offset / 4 * 4;
  uint64_t span = (offset + bytes + 3) / 4 * 4 - start;
  s.skip = offset - start;
  WGPUBufferDescriptor desc = WGPU_BUFFER_DESCRIPTOR_INIT;
  desc.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
  desc.size = s.size = std::max<uint64_t>(span, 4);
  s.staging = api().wgpuDeviceCreateBuffer(impl_->device, &desc);
  if (span) {
    impl_->open_pass();  // ensures an encoder exists
    impl_->close_pass();
    api().wgpuCommandEncoderCopyBufferToBuffer(impl_->encoder, src.state()->buffer, start, s.staging, 0, span);
  }
  flush();
  WGPUBufferMapCallbackInfo cb = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPUMapAsyncStatus status, WGPUStringView message, void* ud, void*) {
    auto res = CallbackSlot<PendingDownload::State::Mapped>::from_userdata(ud);
    res->done = true;
    res->status = status;
    res->message = to_std(message);
  };
  cb.userdata1 = s.slot.userdata();
  api().wgpuBufferMapAsync(s.staging, WGPUMapMode_Read, 0, s.size, cb);
  return p;
}

void PendingDownload::wait(void* data) {
  if (!state_) throw Error(ErrorKind::Value, "PendingDownload::wait: nothing pending (waited for already)");
  std::unique_ptr<State> s = std::move(state_);
  const State::Mapped& r = *s->slot.state;
  while (!r.done) {
    poll(s->impl->instance, s->impl->device, s->until_idle);
    if (s->ctx->device_lost()) break;
#if !defined(__wasm__)
    if (!s->until_idle && !r.done) std::this_thread::yield();
#endif
  }
  if (r.done && r.status == WGPUMapAsyncStatus_Success) {
    const void* mapped = api().wgpuBufferGetConstMappedRange(s->staging, 0, s->size);
    if (mapped) std::memcpy(data, static_cast<const uint8_t*>(mapped) + s->skip, s->bytes);
    api().wgpuBufferUnmap(s->staging);
  }
  s->impl->check();
  if (!r.done || r.status != WGPUMapAsyncStatus_Success)
    throw Error(ErrorKind::Device, "reading " + human_bytes(s->bytes) + " back from the device failed: " + r.message);
}

void Context::download(const Buffer& src, void* data, uint64_t bytes, uint64_t offset) {
  PendingDownload p = download_later(src, bytes, offset);
  p.state_->until_idle = true;
  p.wait(data);
}

bool Context::trusts_validated_kernels() const { return impl_->trust_validated; }
bool Context::unchecked_device() const { return impl_->unchecked_device; }

// Context::kernel and the kernel caches: pipelines.cpp.

Workgroups Context::grid_for(uint64_t workgroups) const {
  uint64_t max = impl_->max_groups_per_dim;
  if (workgroups == 0) return {0, 1, 1};
  if (workgroups <= max) return {uint32_t(workgroups), 1, 1};
  if (workgroups > max * max * max)
    throw Error(ErrorKind::LimitExceeded, "a dispatch of " + std::to_string(workgroups) + " workgroups exceeds " +
                                              std::to_string(max) + "³ on this adapter; split the tensor");
  // Smallest z, then y, such that x·y·z covers the count; kernels skip the overhang.
  uint64_t z = (workgroups + max * max - 1) / (max * max);
  uint64_t per_z = (workgroups + z - 1) / z;
  uint64_t y = (per_z + max - 1) / max;
  uint64_t x = (per_z + y - 1) / y;
  return {uint32_t(x), uint32_t(y), uint32_t(z)};
}

void Context::Impl::open_pass() {
  if (!encoder) {
    WGPUCommandEncoderDescriptor desc = WGPU_COMMAND_ENCODER_DESCRIPTOR_INIT;
    encoder = api().wgpuDeviceCreateCommandEncoder(device, &desc);
  }
  if (pass) return;
  WGPUComputePassDescriptor desc = WGPU_COMPUTE_PASS_DESCRIPTOR_INIT;
  WGPUPassTimestampWrites writes = WGPU_PASS_TIMESTAMP_WRITES_INIT;
  if (profile.on && profile.next) {  // profile.cpp: this pass holds one dispatch
    writes.querySet = profile.set;
    writes.beginningOfPassWriteIndex = profile.used;
    writes.endOfPassWriteIndex = profile.used + 1;
    profile.used += 2;
    profile.pending.push_back(profile.next->label);
    profile.next = nullptr;
    desc.timestampWrites = &writes;
  } else if (timing && query_set) {
    if (queries_used + 2 > query_capacity)
      throw Error(ErrorKind::LimitExceeded,
                  "more than " + std::to_string(kMaxTimedPasses) + " timed passes; time less work at once");
    writes.querySet = query_set;
    writes.beginningOfPassWriteIndex = queries_used;
    writes.endOfPassWriteIndex = queries_used + 1;
    queries_used += 2;
    desc.timestampWrites = &writes;
  }
  pass = api().wgpuCommandEncoderBeginComputePass(encoder, &desc);
}

void Context::Impl::close_pass() {
  if (!pass) return;
  api().wgpuComputePassEncoderEnd(pass);
  api().wgpuComputePassEncoderRelease(pass);
  pass = nullptr;
}

void Context::dispatch(const Kernel& kernel, std::span<const Buffer* const> bindings, std::span<const uint32_t> meta,
                       Workgroups groups) {
  Impl& I = *impl_;
  I.check();
  if (groups.x == 0 || groups.y == 0 || groups.z == 0) return;
  uint32_t max = I.max_groups_per_dim;
  if (groups.x > max || groups.y > max || groups.z > max)
    throw Error(ErrorKind::LimitExceeded, "dispatch (" + std::to_string(groups.x) + ", " + std::to_string(groups.y) +
                                              ", " + std::to_string(groups.z) + ") of kernel '" + kernel.state->entry +
                                              "' exceeds " + std::to_string(max) + " workgroups per dimension");
  if (I.profile.on) profile_before_dispatch(kernel);
  bind(kernel, bindings, meta);
  api().wgpuComputePassEncoderDispatchWorkgroups(I.pass, groups.x, groups.y, groups.z);
  if (I.profile.on) I.close_pass();
  if (++I.dispatches >= kMaxDispatchesPerBatch && !I.timing) flush();
}

void Context::dispatch_indirect(const Kernel& kernel, std::span<const Buffer* const> bindings,
                                std::span<const uint32_t> meta, const Buffer& args, uint64_t offset) {
  Impl& I = *impl_;
  I.check();
  if (offset % 4 || offset + 12 > args.size())
    throw Error(ErrorKind::Value, "dispatch_indirect of kernel '" + kernel.state->entry +
                                      "': the three counts at byte " + std::to_string(offset) +
                                      " must be 4-byte aligned and inside the argument buffer");
  for (const Buffer* b : bindings)
    if (b == &args)
      throw Error(ErrorKind::Value, "dispatch_indirect of kernel '" + kernel.state->entry +
                                        "': the argument buffer cannot also be bound to the kernel");
  if (I.profile.on) profile_before_dispatch(kernel);
  bind(kernel, bindings, meta);
  args.state()->last_batch = I.batch_id;
  api().wgpuComputePassEncoderDispatchWorkgroupsIndirect(I.pass, args.state()->buffer, offset);
  if (I.profile.on) I.close_pass();
  if (++I.dispatches >= kMaxDispatchesPerBatch && !I.timing) flush();
}

void Context::bind(const Kernel& kernel, std::span<const Buffer* const> bindings, std::span<const uint32_t> meta) {
  Impl& I = *impl_;
  if (bindings.size() + 1 > 9) throw Error(ErrorKind::Value, "dispatch: at most 8 storage bindings");
  BindGroupKey key;
  key.ids[0] = kernel.state->id;
  WGPUBindGroupEntry entries[10];
  uint32_t n = 0;
  for (const Buffer* b : bindings) {
    WGPUBindGroupEntry e = WGPU_BIND_GROUP_ENTRY_INIT;
    e.binding = n;
    e.buffer = b->state()->buffer;
    e.offset = 0;
    e.size = b->state()->capacity;
    b->state()->last_batch = I.batch_id;
    key.ids[1 + n] = b->state()->id;
    entries[n++] = e;
  }
  // One buffer bound twice with one of the bindings writable is invalid in WebGPU, and
  // wgpu-native aborts the process at submit on it: refuse it here, with a message.
  for (uint32_t a = 0; a < n; ++a)
    for (uint32_t b = a + 1; b < n; ++b)
      if (entries[a].buffer == entries[b].buffer) {
        auto& w = kernel.state->writable;
        bool wa = a < w.size() && w[a], wb = b < w.size() && w[b];
        if (wa || wb)
          throw Error(ErrorKind::Value, "dispatch of kernel '" + kernel.state->entry +
                                            "' binds one buffer at bindings " + std::to_string(a) + " and " +
                                            std::to_string(b) +
                                            " with one of them writable; WebGPU forbids that aliasing");
      }
  uint32_t dynamic_offset = 0;
  bool has_meta = false;
  if (!meta.empty()) {
    if (kernel.state->meta_binding != n)
      throw Error(ErrorKind::Value,
                  "kernel '" + kernel.state->entry + "' declares no parameter block at binding " + std::to_string(n));
    // Every kernel declares `var<uniform> meta_u: array<vec4<u32>, 64>` (kMetaWords words):
    // uniform values keep barriers in uniform control flow and are read through the constant
    // cache. Blocks are padded to that size.
    if (meta.size() > kMetaWords)
      throw Error(ErrorKind::Value, "kernel '" + kernel.state->entry + "' got " + std::to_string(meta.size()) +
                                        " parameter words; at most " + std::to_string(kMetaWords));
    uint64_t bytes = kMetaWords * 4;
    uint64_t align = std::max<uint32_t>(I.min_uniform_offset_alignment, 4);
    uint64_t at = (I.meta_chunk_used + align - 1) / align * align;
    if (!I.meta_chunk || at + bytes > kMetaChunkBytes) {
      // Chunks never come from the general pool: a pooled buffer may be bound earlier in this
      // very batch, and the parameter write (made at submit) would land before that use.
      if (!I.meta_free.empty()) {
        I.meta_chunk = std::move(I.meta_free.back());
        I.meta_free.pop_back();
      } else {
        auto state = std::make_shared<BufferState>();
        WGPUBufferDescriptor bdesc = WGPU_BUFFER_DESCRIPTOR_INIT;
        bdesc.usage = WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst;
        bdesc.size = state->capacity = kMetaChunkBytes;
        state->buffer = api().wgpuDeviceCreateBuffer(I.device, &bdesc);
        state->id = next_buffer_id();
        I.meta_chunk = BufferPtr(new Buffer(std::move(state), bdesc.size));
      }
      I.batch_keepalive.push_back(I.meta_chunk);
      I.meta_uploads.emplace_back(I.meta_chunk, std::vector<uint8_t>());
      at = 0;
    }
    auto& host = I.meta_uploads.back().second;
    host.resize(at + bytes, 0);
    std::memcpy(host.data() + at, meta.data(), meta.size() * 4);
    I.meta_chunk_used = at + bytes;
    WGPUBindGroupEntry e = WGPU_BIND_GROUP_ENTRY_INIT;
    e.binding = n;
    e.buffer = I.meta_chunk->state()->buffer;
    e.offset = 0;
    e.size = bytes;
    key.ids[1 + n] = I.meta_chunk->state()->id;
    entries[n++] = e;
    dynamic_offset = uint32_t(at);
    has_meta = true;
  }
  WGPUBindGroup group;
  if (auto it = I.bind_groups.find(key); it != I.bind_groups.end()) {
    group = it->second;
  } else {
    if (I.bind_groups.size() >= kMaxCachedBindGroups) I.clear_bind_groups();
    WGPUBindGroupDescriptor desc = WGPU_BIND_GROUP_DESCRIPTOR_INIT;
    desc.layout = kernel.state->layout;
    desc.entryCount = n;
    desc.entries = entries;
    group = api().wgpuDeviceCreateBindGroup(I.device, &desc);
    I.bind_groups.emplace(key, group);
  }
  I.open_pass();
  api().wgpuComputePassEncoderSetPipeline(I.pass, kernel.state->pipeline);
  api().wgpuComputePassEncoderSetBindGroup(I.pass, 0, group, has_meta ? 1 : 0, has_meta ? &dynamic_offset : nullptr);
}

void Context::copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t bytes) {
  impl_->check();
  if ((src_offset | dst_offset | bytes) % 4)
    throw Error(ErrorKind::Value, "buffer copies need offsets and sizes that are multiples of 4 bytes");
  impl_->open_pass();
  impl_->close_pass();
  src.state()->last_batch = dst.state()->last_batch = impl_->batch_id;
  api().wgpuCommandEncoderCopyBufferToBuffer(impl_->encoder, src.state()->buffer, src_offset, dst.state()->buffer,
                                             dst_offset, bytes);
}

void Context::Impl::write_meta_uploads() {
  // Parameter blocks go up right before the submit that reads them; chunks are fresh for this
  // batch, so no earlier command can observe the write.
  for (auto& [chunk, host] : meta_uploads)
    if (!host.empty())
      api().wgpuQueueWriteBuffer(queue, chunk->state()->buffer, 0, host.data(), (host.size() + 3) / 4 * 4);
  meta_uploads.clear();
  meta_chunk.reset();
  meta_chunk_used = 0;
}

void Context::flush() {
  Impl& I = *impl_;
  I.check();
  if (!I.encoder) return;
  I.close_pass();
  WGPUCommandBufferDescriptor desc = WGPU_COMMAND_BUFFER_DESCRIPTOR_INIT;
  WGPUCommandBuffer commands = api().wgpuCommandEncoderFinish(I.encoder, &desc);
  api().wgpuCommandEncoderRelease(I.encoder);
  I.encoder = nullptr;
  I.write_meta_uploads();
  api().wgpuQueueSubmit(I.queue, 1, &commands);
  api().wgpuCommandBufferRelease(commands);
  // Chunks are free again: their next write is made after this submit, so it is ordered.
  for (auto& chunk : I.batch_keepalive)
    if (I.meta_free.size() < 64) I.meta_free.push_back(std::move(chunk));
  I.batch_keepalive.clear();
  I.batch_id++;
  I.dispatches = 0;
}

void Context::sync() {
  flush();
  poll(impl_->instance, impl_->device, true);
  wait_for_submitted_work(*impl_);  // Dawn: poll() only ticks (queue_wait.hpp)
  impl_->check();
}

uint64_t Context::pending_dispatches() const { return impl_->dispatches; }

void Context::begin_timing() {
  Impl& I = *impl_;
  if (!I.features.timestamp_query) return;
  flush();
  if (!I.query_set) {
    WGPUQuerySetDescriptor desc = WGPU_QUERY_SET_DESCRIPTOR_INIT;
    desc.type = WGPUQueryType_Timestamp;
    desc.count = kMaxTimedPasses * 2;
    I.query_set = api().wgpuDeviceCreateQuerySet(I.device, &desc);
    I.query_capacity = desc.count;
  }
  I.queries_used = 0;
  I.timing = true;
}

double Context::timed_ms(const std::function<void()>& work, bool* on_gpu) {
  begin_timing();
  auto w0 = std::chrono::steady_clock::now();
  work();
  double ms = end_timing_ms();
  sync();
  if (on_gpu) *on_gpu = ms > 0;
  if (ms > 0) return ms;
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
}

double Context::end_timing_ms() {
  Impl& I = *impl_;
  if (!I.timing) return -1.0;
  I.close_pass();
  uint32_t used = I.queries_used;
  I.timing = false;
  if (used == 0) return 0.0;
  double period = 0;
  std::vector<uint64_t> stamps = read_timestamps(false, used, &period);
  // From the first pass's beginning to the last pass's end. Summing each pass's own interval
  // counted overlaps twice: a pass's beginning stamp is written as soon as the pass starts, while
  // the previous pass may still run (split-K's sum measured as matmul + matmul + sum).
  uint64_t first = UINT64_MAX, last = 0;
  for (uint32_t i = 0; i + 1 < used; i += 2) {
    first = std::min(first, stamps[i]);
    last = std::max(last, stamps[i + 1]);
  }
  return last > first ? double(last - first) * period / 1e6 : 0.0;
}

std::vector<uint64_t> Context::read_timestamps(bool profile, uint32_t count, double* period_ns) {
  Impl& I = *impl_;
  I.close_pass();
  I.open_pass();  // an encoder to record the resolve into
  I.close_pass();
  WGPUBufferDescriptor desc = WGPU_BUFFER_DESCRIPTOR_INIT;
  desc.usage = WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc;
  desc.size = uint64_t(count) * 8;
  WGPUBuffer resolve = api().wgpuDeviceCreateBuffer(I.device, &desc);
  api().wgpuCommandEncoderResolveQuerySet(I.encoder, profile ? I.profile.set : I.query_set, 0, count, resolve, 0);
  auto host = alloc(desc.size, "timestamps");
  api().wgpuCommandEncoderCopyBufferToBuffer(I.encoder, resolve, 0, host->state()->buffer, 0, desc.size);
  std::vector<uint64_t> stamps(count);
  download(*host, stamps.data(), desc.size);
  api().wgpuBufferRelease(resolve);
  *period_ns = timestamp_period(I.queue);
  return stamps;
}

}  // namespace surfgrad::gpu

namespace surfgrad::gpu {

const Buffer& Context::fault_flag() {
  if (!impl_->fault) {
    impl_->fault = alloc(4, "fault flag");
    uint32_t zero = 0;
    upload(*impl_->fault, &zero, 4);
  }
  impl_->fault_pending = true;
  return *impl_->fault;
}

uint32_t Context::take_faults() {
  if (!impl_->fault_pending) return 0;
  uint32_t code = 0;
  download(*impl_->fault, &code, 4);
  impl_->fault_pending = false;
  if (code) {
    uint32_t zero = 0;
    upload(*impl_->fault, &zero, 4);
  }
  return code;
}

}  // namespace surfgrad::gpu
