#include <algorithm>
#include <atomic>
#include <bit>

#include "impl.hpp"

namespace surfgrad::gpu {

uint64_t next_buffer_id() {
  static std::atomic<uint64_t> counter{0};
  return ++counter;
}

uint64_t BufferPool::size_class(uint64_t bytes) {
  if (bytes <= 256) return 256;
  uint64_t top = std::bit_floor(bytes);  // 2^k ≤ bytes
  uint64_t quarter = top / 4;
  return (bytes + quarter - 1) / quarter * quarter;
}

std::shared_ptr<BufferState> BufferPool::acquire(uint64_t bytes, bool& fresh) {
  uint64_t cls = size_class(bytes);
  auto state = std::make_shared<BufferState>();
  state->capacity = cls;
  {
    platform::LockGuard lock(mutex_);
    auto it = free_.find(cls);
    if (it != free_.end()) {
      state->buffer = it->second.buffer;
      state->id = it->second.id;
      state->last_batch = it->second.last_batch;
      free_.erase(it);
      stats_.pooled_buffers--;
      stats_.pooled_bytes -= cls;
      stats_.reuses++;
      fresh = false;
    }
  }
  if (!state->buffer) {
    WGPUBufferDescriptor desc = WGPU_BUFFER_DESCRIPTOR_INIT;
    desc.usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst | WGPUBufferUsage_Indirect;
    desc.size = cls;
    state->buffer = api().wgpuDeviceCreateBuffer(device_, &desc);
    state->id = next_buffer_id();
    fresh = true;
    platform::LockGuard lock(mutex_);
    stats_.allocations++;
  }
  platform::LockGuard lock(mutex_);
  stats_.live_buffers++;
  stats_.live_bytes += cls;
  stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, stats_.live_bytes);
  return state;
}

void BufferPool::release(BufferState* state) {
  platform::LockGuard lock(mutex_);
  stats_.live_buffers--;
  stats_.live_bytes -= state->capacity;
  stats_.pooled_buffers++;
  stats_.pooled_bytes += state->capacity;
  free_.emplace(state->capacity, Pooled{state->buffer, state->id, state->last_batch});
  state->buffer = nullptr;
}

void BufferPool::trim() {
  platform::LockGuard lock(mutex_);
  for (auto& [cls, entry] : free_) api().wgpuBufferRelease(entry.buffer);
  free_.clear();
  stats_.pooled_buffers = stats_.pooled_bytes = 0;
}

PoolStats BufferPool::stats() const {
  platform::LockGuard lock(mutex_);
  return stats_;
}

BufferPool::~BufferPool() { trim(); }

Buffer::~Buffer() {
  if (!state_ || !state_->buffer) return;
  if (auto pool = state_->pool.lock()) {
    pool->release(state_.get());
  } else {
    api().wgpuBufferRelease(state_->buffer);
  }
}

uint64_t Buffer::size() const { return size_; }

}  // namespace surfgrad::gpu
