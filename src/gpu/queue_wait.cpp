// queue_wait.hpp. Dawn's function is looked up in its library by name (like wgpuDeviceTick in
// webgpu_api.cpp), so the function table the browser bridge fills needs nothing new.
#include "queue_wait.hpp"

#include "impl.hpp"
#include "webgpu_api.hpp"

#if !defined(__wasm__)
#include <dlfcn.h>
#endif

namespace surfgrad::gpu {

void wait_for_submitted_work(Context::Impl& impl) {
#if defined(__wasm__)
  (void)impl;
#else
  const WebGpuApi& A = api();
  if (A.implementation != WebGpuImplementation::Dawn || !A.handle) return;
  static const auto on_done =
      reinterpret_cast<decltype(&::wgpuQueueOnSubmittedWorkDone)>(dlsym(A.handle, "wgpuQueueOnSubmittedWorkDone"));
  if (!on_done) return;  // an older Dawn: sync() stays a tick, as before
  struct Done {
    bool done = false;
  };
  CallbackSlot<Done> slot;
  WGPUQueueWorkDoneCallbackInfo cb = WGPU_QUEUE_WORK_DONE_CALLBACK_INFO_INIT;
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPUQueueWorkDoneStatus, WGPUStringView, void* ud, void*) {
    CallbackSlot<Done>::from_userdata(ud)->done = true;  // any status: done or cancelled, stop waiting
  };
  cb.userdata1 = slot.userdata();
  on_done(impl.queue, cb);
  while (!slot.state->done) {
    poll(impl.instance, impl.device, true);  // ticks Dawn, runs the callbacks, yields the core
    platform::LockGuard lock(impl.error_mutex);
    if (impl.lost) return;
  }
#endif
}

}  // namespace surfgrad::gpu
