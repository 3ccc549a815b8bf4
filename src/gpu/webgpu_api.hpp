// The WebGPU C API as surfgrad calls it: one table of function pointers, filled at run time from
// the implementation SURFGRAD_WEBGPU names (issue 34):
//   wgpu (default)  wgpu-native, linked into the library (the table holds its functions);
//   dawn            Dawn's libwebgpu_dawn.so, dlopen'ed (SURFGRAD_DAWN_LIBRARY or the copy
//                   scripts/setup.sh unpacked), its functions looked up by name.
// Both follow the same webgpu.h (wgpu-native's, which the project builds against: every function
// and struct in it agrees with Dawn's). What differs between them lives behind the seam below:
// polling, adapter enumeration, version, trusted shader modules, timestamp period, Dawn's toggles.
// In the browser (wasm32) the table holds the JavaScript bridge's functions, as before.
// Only src/gpu/*.cpp include this.
#pragma once
#include <webgpu/webgpu.h>
#include <webgpu/wgpu.h>

#include <string>
#include <vector>

#include "surfgrad/gpu.hpp"

namespace surfgrad::gpu {

// Every standard webgpu.h function surfgrad calls. X(name) gives the member `wgpu##name`.
// clang-format off
#define SURFGRAD_WEBGPU_FUNCTIONS(X)                                                                           \
  X(AdapterGetFeatures) X(AdapterGetInfo) X(AdapterGetLimits) X(AdapterInfoFreeMembers) X(AdapterRelease)      \
  X(AdapterRequestDevice) X(BindGroupLayoutRelease) X(BindGroupRelease) X(BufferGetConstMappedRange)           \
  X(BufferMapAsync) X(BufferRelease) X(BufferUnmap) X(CommandBufferRelease) X(CommandEncoderBeginComputePass)  \
  X(CommandEncoderCopyBufferToBuffer) X(CommandEncoderFinish) X(CommandEncoderRelease)                         \
  X(CommandEncoderResolveQuerySet) X(ComputePassEncoderDispatchWorkgroups)                                     \
  X(ComputePassEncoderDispatchWorkgroupsIndirect) X(ComputePassEncoderEnd) X(ComputePassEncoderRelease)        \
  X(ComputePassEncoderSetBindGroup) X(ComputePassEncoderSetPipeline) X(ComputePipelineRelease)                 \
  X(CreateInstance) X(DeviceCreateBindGroup) X(DeviceCreateBindGroupLayout) X(DeviceCreateBuffer)              \
  X(DeviceCreateCommandEncoder) X(DeviceCreateComputePipeline) X(DeviceCreatePipelineLayout)                   \
  X(DeviceCreateQuerySet) X(DeviceCreateShaderModule) X(DeviceDestroy) X(DeviceGetFeatures)                    \
  X(DeviceGetLimits) X(DeviceGetQueue) X(DevicePopErrorScope) X(DevicePushErrorScope) X(DeviceRelease)         \
  X(InstanceProcessEvents) X(InstanceRelease) X(PipelineLayoutRelease) X(QuerySetRelease) X(QueueRelease)      \
  X(QueueSubmit) X(QueueWriteBuffer) X(ShaderModuleRelease) X(SupportedFeaturesFreeMembers)
// clang-format on

enum class WebGpuImplementation { Wgpu, Dawn };

// The browser build: the page's WebGPU through web/package/webgpu_bridge.js (Chromium's is Dawn;
// its WGSL compiler, like every browser's, wants standard WGSL: wgsl_dialect.cpp).
#if defined(__wasm__)
inline constexpr bool kBrowserBuild = true;
#else
inline constexpr bool kBrowserBuild = false;
#endif

// Whether kernels go to a compiler of standard WGSL (Tint: Dawn natively, and the browsers) rather
// than naga's dialect (wgpu-native).
bool standard_wgsl();

struct WebGpuApi {
#define SURFGRAD_WEBGPU_MEMBER(name) decltype(&::wgpu##name) wgpu##name = nullptr;
  SURFGRAD_WEBGPU_FUNCTIONS(SURFGRAD_WEBGPU_MEMBER)
#undef SURFGRAD_WEBGPU_MEMBER
  WebGpuImplementation implementation = WebGpuImplementation::Wgpu;
  std::string library;  // the shared library the functions come from ("" where linked in)
  void* handle = nullptr;
  // Dawn only (null elsewhere): wgpuDeviceTick, and wgpuAdapterPropertiesSubgroupMatrixConfigs-
  // FreeMembers (typed in dawn_abi.hpp; in the browser build the bridge provides it, since
  // Chromium's WebGPU is Dawn).
  void (*dawnDeviceTick)(WGPUDevice) = nullptr;
  // Standard, but wgpu-native's path (and the browser bridge) enumerate adapters instead.
  decltype(&::wgpuInstanceRequestAdapter) wgpuInstanceRequestAdapter = nullptr;
  void* dawnFreeSubgroupMatrixConfigs = nullptr;
};

// The process's table: chosen on first use from SURFGRAD_WEBGPU ("wgpu" when unset). Throws
// surfgrad::Error (Value for an unknown name, Device when Dawn's library cannot be loaded or
// lacks a function) naming the variable and the fix.
const WebGpuApi& api();
const char* implementation_name(WebGpuImplementation);

// ---- The seam: what the two implementations do differently ------------------------------------
// An instance for the given wgpu-native backend mask (WGPUInstanceBackend_*); Dawn gets its
// toggles (allow_unsafe_apis, vulkan_enable_f16_on_nvidia) here.
WGPUInstance create_instance(uint32_t backend_mask);
// Every adapter the instance offers for the mask (Dawn: the one it recommends per backend type).
std::vector<WGPUAdapter> enumerate_adapters(WGPUInstance instance, uint32_t backend_mask);
// Chained into WGPUDeviceDescriptor::nextInChain (Dawn's device toggles; null for wgpu-native);
// unchecked adds disable_robustness (ContextOptions::own_kernels_only).
WGPUChainedStruct* device_chain(bool unchecked = false);
// Makes progress on queued work and callbacks; wait: block until the device is idle (wgpu-native)
// or at least tick it (Dawn, whose waits are in InstanceProcessEvents loops).
void poll(WGPUInstance instance, WGPUDevice device, bool wait);
// "wgpu-native 29.0.1.1", "Dawn (libwebgpu_dawn.so at PATH)".
std::string implementation_version();
// Trusted: no runtime bounds checks where the implementation can drop them (wgpu-native).
WGPUShaderModule create_shader_module(WGPUDevice device, const WGPUShaderModuleDescriptor* desc, bool trusted);
// Nanoseconds a timestamp tick (Dawn's timestamps are already in nanoseconds).
float timestamp_period(WGPUQueue queue);

// The WGSL Dawn's Tint accepts for a kernel in naga's dialect (wgsl_dialect.cpp).
std::string dawn_wgsl(const std::string& wgsl);

// Dawn's subgroup-matrix shapes of the adapter (dawn_features.cpp); empty under wgpu-native, or
// where the adapter lacks the feature (then *error may say why).
std::vector<Features::SubgroupMatrixShape> dawn_subgroup_matrix_configs(WGPUAdapter adapter, std::string* error);

}  // namespace surfgrad::gpu
