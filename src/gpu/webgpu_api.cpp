// The WebGPU function table and the seam between wgpu-native and Dawn (webgpu_api.hpp).
#include "webgpu_api.hpp"

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "dawn_abi.hpp"
#include "impl.hpp"

#if !defined(__wasm__)
#include <dlfcn.h>

#include <thread>
#endif

namespace surfgrad::gpu {

const char* implementation_name(WebGpuImplementation i) { return i == WebGpuImplementation::Dawn ? "dawn" : "wgpu"; }

#if defined(__wasm__)
// Dawn's, provided by the bridge (not in wgpu-native's headers, so imported by name here).
extern "C"
    __attribute__((import_module("env"), import_name("wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers"))) void
        sg_free_subgroup_matrix_configs(dawn::AdapterPropertiesSubgroupMatrixConfigs);
#endif

static WebGpuApi linked_api() {
  WebGpuApi a;
#define SURFGRAD_WEBGPU_LINKED(name) a.wgpu##name = &::wgpu##name;
  SURFGRAD_WEBGPU_FUNCTIONS(SURFGRAD_WEBGPU_LINKED)
#undef SURFGRAD_WEBGPU_LINKED
#if defined(__wasm__)
  a.dawnFreeSubgroupMatrixConfigs = reinterpret_cast<void*>(&sg_free_subgroup_matrix_configs);
#endif
  return a;
}

bool standard_wgsl() { return kBrowserBuild || api().implementation == WebGpuImplementation::Dawn; }

bool Context::indirect_dispatch_costly() const {
  if (const char* env = std::getenv("SURFGRAD_INDIRECT_DISPATCH"); env && *env) return std::string(env) == "0";
  return standard_wgsl();
}

#if !defined(__wasm__)
// Where Dawn is looked for: SURFGRAD_DAWN_LIBRARY, else the copy scripts/setup.sh unpacked
// (CMake passes its path), else the loader's search path.
static std::string dawn_library_path() {
  if (const char* env = std::getenv("SURFGRAD_DAWN_LIBRARY"); env && *env) return env;
#ifdef SURFGRAD_DAWN_DEFAULT_LIBRARY
  return SURFGRAD_DAWN_DEFAULT_LIBRARY;
#else
  return "libwebgpu_dawn.so";
#endif
}

static WebGpuApi dawn_api() {
  WebGpuApi a;
  a.implementation = WebGpuImplementation::Dawn;
  a.library = dawn_library_path();
  // RTLD_LOCAL | RTLD_DEEPBIND: wgpu-native is linked into the process and exports the same
  // wgpu* names; Dawn's calls to its own functions must reach Dawn's.
  a.handle = dlopen(a.library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!a.handle) {
    const char* why = dlerror();
    throw Error(ErrorKind::Device, "SURFGRAD_WEBGPU=dawn: cannot load Dawn from '" + a.library + "' (" +
                                       (why ? why : "unknown error") +
                                       "); run scripts/setup.sh (it unpacks libwebgpu_dawn.so), set "
                                       "SURFGRAD_DAWN_LIBRARY to the file, or unset SURFGRAD_WEBGPU for wgpu-native");
  }
  auto need = [&](const char* name) {
    void* f = dlsym(a.handle, name);
    if (!f)
      throw Error(ErrorKind::Device, "SURFGRAD_WEBGPU=dawn: '" + a.library + "' has no " + name +
                                         "; is it Dawn's libwebgpu_dawn.so (scripts/setup.sh pins one)?");
    return f;
  };
#define SURFGRAD_WEBGPU_DLSYM(name) a.wgpu##name = reinterpret_cast<decltype(a.wgpu##name)>(need("wgpu" #name));
  SURFGRAD_WEBGPU_FUNCTIONS(SURFGRAD_WEBGPU_DLSYM)
#undef SURFGRAD_WEBGPU_DLSYM
  a.dawnDeviceTick = reinterpret_cast<void (*)(WGPUDevice)>(need("wgpuDeviceTick"));
  a.wgpuInstanceRequestAdapter =
      reinterpret_cast<decltype(a.wgpuInstanceRequestAdapter)>(need("wgpuInstanceRequestAdapter"));
  a.dawnFreeSubgroupMatrixConfigs = need("wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers");
  return a;  // the handle stays open for the process's life (Dawn's threads run its code)
}
#endif

static WebGpuApi choose_api() {
  const char* env = std::getenv("SURFGRAD_WEBGPU");
  std::string name = env ? env : "";
  if (name.empty() || name == "wgpu" || name == "wgpu-native") return linked_api();
  if (name == "dawn") {
#if defined(__wasm__)
    throw Error(ErrorKind::Unsupported, "SURFGRAD_WEBGPU=dawn: the browser build uses the page's WebGPU");
#else
    return dawn_api();
#endif
  }
  throw Error(ErrorKind::Value, "SURFGRAD_WEBGPU='" + name + "' is not a WebGPU implementation; use wgpu or dawn");
}

const WebGpuApi& api() {
  // Chosen once: objects of one implementation must never reach the other. A failed choice
  // is thrown again at every call (not cached), so the message stays visible.
  // The table and its lock live until the process ends (never destroyed): objects released
  // during static destruction or an interpreter's teardown (the Python module's tensors) still
  // call through it. A static unique_ptr freed it first, and such a late release read freed
  // memory (a rare segfault at the Python suite's exit in CI).
  static platform::Mutex& m = *new platform::Mutex;
  static const WebGpuApi* chosen = nullptr;
  static std::atomic<const WebGpuApi*> fast = nullptr;
  if (const WebGpuApi* f = fast.load(std::memory_order_acquire)) return *f;
  platform::LockGuard lock(m);
  if (!chosen) chosen = new WebGpuApi(choose_api());
  fast.store(chosen, std::memory_order_release);
  return *chosen;
}

// ---- Dawn's toggles -------------------------------------------------------------------------
// allow_unsafe_apis: experimental features (subgroup matrices) are offered only with it.
// vulkan_enable_f16_on_nvidia: without it Dawn refuses shader-f16 on NVIDIA's Vulkan driver
// (and then lists only the int8 subgroup-matrix configs; checked on the H100, issue 34).
// SURFGRAD_DAWN_TOGGLES adds toggles by name, comma-separated, "-name" to turn one off (e.g.
// "disable_robustness,disable_workgroup_init" to measure what Tint's bounds clamps and Dawn's
// zeroing of workgroup memory cost a kernel); Dawn warns about names it doesn't know.
// unchecked (ContextOptions::own_kernels_only): disable_robustness besides, for devices that run
// only surfgrad's own kernels (SURFGRAD_CHECKED_KERNELS=1 keeps them checked).
struct DawnToggleLists {
  std::vector<std::string> names_on, names_off;
  std::vector<const char*> on, off;
  explicit DawnToggleLists(bool unchecked) {
    names_on = {"allow_unsafe_apis", "vulkan_enable_f16_on_nvidia"};
    if (unchecked) names_on.push_back("disable_robustness");
    // The blob cache (pipeline_cache.hpp) is Dawn's only cache across runs: never let a default
    // turn it off.
    names_off = {"disable_blob_cache"};
    if (const char* env = std::getenv("SURFGRAD_DAWN_TOGGLES")) {
      std::string list = env;
      for (size_t start = 0; start <= list.size();) {
        size_t end = list.find(',', start);
        if (end == std::string::npos) end = list.size();
        std::string name = list.substr(start, end - start);
        if (!name.empty() && name[0] == '-')
          names_off.push_back(name.substr(1));
        else if (!name.empty())
          names_on.push_back(name);
        start = end + 1;
      }
    }
    for (const auto& n : names_on) on.push_back(n.c_str());
    for (const auto& n : names_off) off.push_back(n.c_str());
  }
};
static dawn::TogglesDescriptor dawn_toggles(bool unchecked = false) {
  static const DawnToggleLists checked_lists(false), unchecked_lists(true);
  const DawnToggleLists& lists = unchecked ? unchecked_lists : checked_lists;
  dawn::TogglesDescriptor t = {};
  t.chain.sType = static_cast<WGPUSType>(dawn::kSTypeTogglesDescriptor);
  t.enabledToggleCount = lists.on.size();
  t.enabledToggles = lists.on.data();
  t.disabledToggleCount = lists.off.size();
  t.disabledToggles = lists.off.data();
  return t;
}

WGPUInstance create_instance(uint32_t backend_mask) {
  const WebGpuApi& A = api();
  WGPUInstanceDescriptor idesc = WGPU_INSTANCE_DESCRIPTOR_INIT;
  if (A.implementation == WebGpuImplementation::Dawn) {
    dawn::TogglesDescriptor toggles = dawn_toggles();
    idesc.nextInChain = &toggles.chain;
    return A.wgpuCreateInstance(&idesc);
  }
  WGPUInstanceExtras extras = {};
  extras.chain.sType = static_cast<WGPUSType>(WGPUSType_InstanceExtras);
  extras.backends = backend_mask;
  idesc.nextInChain = &extras.chain;
  return A.wgpuCreateInstance(&idesc);
}

static WGPUAdapter dawn_request_adapter(WGPUInstance instance, WGPUBackendType type, bool fallback) {
  const WebGpuApi& A = api();
  dawn::TogglesDescriptor toggles = dawn_toggles();
  WGPURequestAdapterOptions o = WGPU_REQUEST_ADAPTER_OPTIONS_INIT;
  o.nextInChain = &toggles.chain;
  o.powerPreference = WGPUPowerPreference_HighPerformance;
  o.backendType = type;
  o.forceFallbackAdapter = fallback;
  struct Result {
    WGPUAdapter adapter = nullptr;
    bool done = false;
  };
  CallbackSlot<Result> slot;
  WGPURequestAdapterCallbackInfo cb = WGPU_REQUEST_ADAPTER_CALLBACK_INFO_INIT;
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView, void* ud, void*) {
    auto r = CallbackSlot<Result>::from_userdata(ud);
    r->done = true;
    if (status == WGPURequestAdapterStatus_Success) r->adapter = adapter;
  };
  cb.userdata1 = slot.userdata();
  A.wgpuInstanceRequestAdapter(instance, &o, cb);
  for (int i = 0; i < 100000 && !slot.state->done; ++i) A.wgpuInstanceProcessEvents(instance);
  return slot.state->adapter;
}

std::vector<WGPUAdapter> enumerate_adapters(WGPUInstance instance, uint32_t backend_mask) {
  const WebGpuApi& A = api();
  if (A.implementation == WebGpuImplementation::Wgpu) {
    WGPUInstanceEnumerateAdapterOptions eopts = {nullptr, backend_mask};
    size_t count = wgpuInstanceEnumerateAdapters(instance, &eopts, nullptr);
    std::vector<WGPUAdapter> adapters(count);
    if (count) wgpuInstanceEnumerateAdapters(instance, &eopts, adapters.data());
    return adapters;
  }
  // Dawn's C API has no enumeration: ask for its recommended adapter of each backend in the mask.
  std::vector<WGPUBackendType> types;
  if (backend_mask == WGPUInstanceBackend_All) types = {WGPUBackendType_Undefined};
  if (backend_mask & WGPUInstanceBackend_Vulkan) types.push_back(WGPUBackendType_Vulkan);
  if (backend_mask & WGPUInstanceBackend_GL) types.push_back(WGPUBackendType_OpenGLES);
  if (backend_mask & WGPUInstanceBackend_Metal) types.push_back(WGPUBackendType_Metal);
  if (backend_mask & WGPUInstanceBackend_DX12) types.push_back(WGPUBackendType_D3D12);
  std::vector<WGPUAdapter> adapters;
  for (WGPUBackendType t : types) {
    WGPUAdapter a = dawn_request_adapter(instance, t, false);
    if (!a) a = dawn_request_adapter(instance, t, true);  // a CPU driver (lavapipe) is Dawn's "fallback"
    if (a) adapters.push_back(a);
  }
  return adapters;
}

WGPUChainedStruct* device_chain(bool unchecked) {
  if (api().implementation != WebGpuImplementation::Dawn) return nullptr;
  static dawn::TogglesDescriptor checked_toggles = dawn_toggles(false), unchecked_toggles = dawn_toggles(true);
  return unchecked ? &unchecked_toggles.chain : &checked_toggles.chain;
}

void poll(WGPUInstance instance, WGPUDevice device, bool wait) {
  const WebGpuApi& A = api();
  if (A.implementation == WebGpuImplementation::Dawn) {
    A.dawnDeviceTick(device);
    // Callers loop on their callback's flag; give the core back meanwhile (lavapipe's threads
    // run the work on the same two cores in CI).
#if !defined(__wasm__)
    if (wait) std::this_thread::yield();
#endif
  } else {
    wgpuDevicePoll(device, wait, nullptr);
  }
  A.wgpuInstanceProcessEvents(instance);
}

std::string implementation_version() {
  const WebGpuApi& A = api();
  if (A.implementation == WebGpuImplementation::Dawn) return "Dawn (" + A.library + ")";
  // WebAssembly: the page's WebGPU through the bridge (Dawn in Chromium), whose wgpuGetVersion
  // returns the header's version only; naming wgpu-native there sent error readers the wrong way.
  if (kBrowserBuild) return "the browser's WebGPU";
  uint32_t v = wgpuGetVersion();
  return "wgpu-native " + std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 0xff) + "." +
         std::to_string((v >> 8) & 0xff) + "." + std::to_string(v & 0xff);
}

WGPUShaderModule create_shader_module(WGPUDevice device, const WGPUShaderModuleDescriptor* desc, bool trusted) {
  const WebGpuApi& A = api();
  // Trusted: no bounds checks. Loop bounding stays (it cost nothing measurable on the H200).
  if (trusted && A.implementation == WebGpuImplementation::Wgpu)
    return wgpuDeviceCreateShaderModuleTrusted(device, desc, WGPUShaderRuntimeChecks_ForceLoopBounding);
  return A.wgpuDeviceCreateShaderModule(device, desc);
}

float timestamp_period(WGPUQueue queue) {
  if (api().implementation == WebGpuImplementation::Dawn) return 1.0f;
  return wgpuQueueGetTimestampPeriod(queue);
}

}  // namespace surfgrad::gpu
