// Deferred GPU errors (Context::defer_errors, issue 36). JavaScript's tensor calls run
// synchronously: a WebAssembly call that is not a JSPI `promising` export may not suspend, so it
// cannot wait for an error scope's answer (a promise in the browser). Kernel builds and large
// allocations inside such a call still open their scopes; pop_scope hands them here, which pops
// without waiting and keeps the answer under the label of the call (the op and its operands).
// The next read settles them: the first error is thrown there, naming the op that recorded it.
//
// What an error leaves behind: WebGPU hands out an invalid object for a rejected kernel or a
// failed allocation, and every command using it fails too (uncaptured errors, kept as the sticky
// error). Those follow from the first error, so settling waits for the work submitted and drops
// them. The answer does not say which build or allocation failed, so the kernel caches are
// emptied (a rejected kernel is built again at its next use, and fails there, named, instead of
// failing every later submission unnamed) and pooled buffers let go (a new pool), so that a
// failed allocation is never handed out again.
#include <memory>

#include "impl.hpp"
#include "testing.hpp"

namespace surfgrad::gpu {

struct DeferredScope : ScopeAnswer {
  std::string label;
};

std::pair<WGPUErrorType, std::string> defer_scope(Context::Impl& impl) {
  auto scope = std::make_shared<DeferredScope>();
  scope->label = impl.defer_label;
  // The callback owns a reference (CallbackSlot): a context closed before the answer comes
  // must not leave it writing into freed memory.
  CallbackSlot<DeferredScope> slot;
  slot.state = scope;
  pop_error_scope(impl.device, slot);
  impl.deferred.push_back(std::move(scope));
  return {WGPUErrorType_NoError, {}};
}

std::string Context::defer_errors(std::string label) {
  std::string previous = std::move(impl_->defer_label);
  impl_->defer_label = std::move(label);
  return previous;
}

void Context::settle_deferred_errors() {
  Impl& I = *impl_;
  // Scopes deferred while this waits (another call, while this one is suspended in the
  // browser) stay for the next settle.
  std::vector<std::shared_ptr<DeferredScope>> scopes;
  scopes.swap(I.deferred);
  for (const auto& s : scopes)
    for (int spins = 0; !s->done; ++spins) {
      api().wgpuInstanceProcessEvents(I.instance);
      if (s->done) break;
      poll(I.instance, I.device, spins > 1000);
      if (device_lost()) {
        I.check();  // throws the loss: the answers will not come
        return;
      }
    }
  auto drop_sticky = [&] {
    platform::LockGuard lock(I.error_mutex);
    I.sticky_error.clear();
  };
  for (const auto& s : scopes) {
    if (s->type == WGPUErrorType_NoError) continue;
    // What followed from this error: the batch that used the invalid object, submitted and
    // waited for, so that its uncaptured errors arrive now rather than at a later call.
    drop_sticky();
    flush();
    poll(I.instance, I.device, true);
    api().wgpuInstanceProcessEvents(I.instance);
    drop_sticky();
    {
      platform::LockGuard lock(I.builds.mutex);
      I.kernels.clear();
      I.keyed_kernels.clear();
    }
    I.clear_bind_groups();  // they hold pooled buffers
    I.pool = std::make_shared<BufferPool>(I.device);
    const bool oom = s->type == WGPUErrorType_OutOfMemory;
    throw Error(oom ? ErrorKind::OutOfMemory : ErrorKind::Device,
                s->label + " (recorded earlier, run on the GPU before this read) failed: " +
                    (oom ? "out of memory: " : "") + s->message);
  }
}

std::string ContextTesting::build_in_scope(Context& ctx, const std::string& wgsl) {
  Context::Impl& I = *ctx.impl_;
  ScopeGuard gate(I.builds.gate, true);
  api().wgpuDevicePushErrorScope(I.device, WGPUErrorFilter_Validation);
  WGPUShaderSourceWGSL source = WGPU_SHADER_SOURCE_WGSL_INIT;
  source.code = to_view(wgsl);
  WGPUShaderModuleDescriptor desc = WGPU_SHADER_MODULE_DESCRIPTOR_INIT;
  desc.nextInChain = &source.chain;
  WGPUShaderModule module = api().wgpuDeviceCreateShaderModule(I.device, &desc);
  auto [type, message] = pop_scope(I);
  if (module) api().wgpuShaderModuleRelease(module);
  return type == WGPUErrorType_NoError ? "" : message.empty() ? "rejected" : message;
}

}  // namespace surfgrad::gpu
