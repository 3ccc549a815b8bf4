// Context: instance → adapter → device, with features, limits and the sticky error state.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dawn_abi.hpp"
#include "impl.hpp"
#include "pipeline_cache.hpp"

namespace surfgrad::gpu {

const char* backend_name(WGPUBackendType type) {
  switch (type) {
    case WGPUBackendType_Vulkan: return "vulkan";
    case WGPUBackendType_OpenGL: return "opengl";
    case WGPUBackendType_OpenGLES: return "gles";
    case WGPUBackendType_Metal: return "metal";
    case WGPUBackendType_D3D12: return "d3d12";
    case WGPUBackendType_D3D11: return "d3d11";
    case WGPUBackendType_WebGPU: return "webgpu";
    default: return "unknown";
  }
}

static const char* adapter_type_name(WGPUAdapterType type) {
  switch (type) {
    case WGPUAdapterType_DiscreteGPU: return "discrete GPU";
    case WGPUAdapterType_IntegratedGPU: return "integrated GPU";
    case WGPUAdapterType_CPU: return "CPU";
    default: return "unknown";
  }
}

std::string feature_name(WGPUFeatureName f) {
  switch (static_cast<uint32_t>(f)) {
    case WGPUFeatureName_ShaderF16: return "shader-f16";
    case WGPUFeatureName_Subgroups: return "subgroups";
    case WGPUFeatureName_TimestampQuery: return "timestamp-query";
    case WGPUFeatureName_DepthClipControl: return "depth-clip-control";
    case WGPUFeatureName_Depth32FloatStencil8: return "depth32float-stencil8";
    case WGPUFeatureName_TextureCompressionBC: return "texture-compression-bc";
    case WGPUFeatureName_TextureCompressionETC2: return "texture-compression-etc2";
    case WGPUFeatureName_TextureCompressionASTC: return "texture-compression-astc";
    case WGPUFeatureName_IndirectFirstInstance: return "indirect-first-instance";
    case WGPUFeatureName_Float32Filterable: return "float32-filterable";
    case WGPUFeatureName_Float32Blendable: return "float32-blendable";
    case WGPUFeatureName_DualSourceBlending: return "dual-source-blending";
    case WGPUFeatureName_ClipDistances: return "clip-distances";
    case WGPUFeatureName_CoreFeaturesAndLimits: return "core-features-and-limits";
    case WGPUNativeFeature_Subgroup: return "native:subgroup";
    case WGPUNativeFeature_ShaderF64: return "native:shader-f64";
    case WGPUNativeFeature_ShaderInt64: return "native:shader-int64";
    case WGPUNativeFeature_ShaderFloat32Atomic: return "native:shader-float32-atomic";
    case WGPUNativeFeature_TimestampQueryInsidePasses: return "native:timestamp-query-inside-passes";
    case WGPUNativeFeature_TimestampQueryInsideEncoders: return "native:timestamp-query-inside-encoders";
    case WGPUNativeFeature_PipelineStatisticsQuery: return "native:pipeline-statistics-query";
    case WGPUNativeFeature_Immediates: return "native:immediates";
    case WGPUNativeFeature_ShaderI16: return "native:shader-i16";
    case WGPUNativeFeature_CooperativeMatrix: return "native:cooperative-matrix";
    case dawn::kFeatureSubgroupMatrix: return "chromium-experimental-subgroup-matrix";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%08x", static_cast<uint32_t>(f));
      return buf;
    }
  }
}

static std::vector<WGPUFeatureName> supported(WGPUSupportedFeatures sf) {
  std::vector<WGPUFeatureName> out(sf.features, sf.features + sf.featureCount);
  api().wgpuSupportedFeaturesFreeMembers(sf);
  return out;
}

void Context::Impl::check() {
  platform::LockGuard lock(error_mutex);
  if (lost) {
    throw Error(ErrorKind::DeviceLost,
                "the WebGPU device was lost (" + lost_message +
                    "); every tensor on it is gone. Create a new Context and upload the data again.");
  }
  if (!sticky_error.empty()) {
    std::string message = std::move(sticky_error);
    sticky_error.clear();
    throw Error(ErrorKind::Device, "WebGPU reported: " + message);
  }
}

static void on_uncaptured_error(WGPUDevice const*, WGPUErrorType type, WGPUStringView message, void* userdata, void*) {
  if (capture_build_error(type, message)) return;  // a worker thread's kernel build (pipelines.cpp)
  auto* impl = static_cast<Context::Impl*>(userdata);
  platform::LockGuard lock(impl->error_mutex);
  if (impl->sticky_error.empty()) {
    impl->sticky_error = (type == WGPUErrorType_OutOfMemory ? "out of memory: " : "") + to_std(message);
  }
}

static void on_device_lost(WGPUDevice const*, WGPUDeviceLostReason reason, WGPUStringView message, void* userdata,
                           void*) {
  if (reason == WGPUDeviceLostReason_CallbackCancelled) return;  // our own shutdown
  // A request that failed (the cooperative-matrix retry in Context::create) loses no device of ours.
  if (reason == WGPUDeviceLostReason_FailedCreation) return;
  auto* impl = static_cast<Context::Impl*>(userdata);
  platform::LockGuard lock(impl->error_mutex);
  impl->lost = true;
  impl->lost_message = reason == WGPUDeviceLostReason_Destroyed ? "destroyed" : to_std(message);
  if (impl->lost_message.empty()) impl->lost_message = "reason " + std::to_string(reason);
}

static uint32_t backend_mask(Backend b) {
  switch (b) {
    case Backend::Vulkan: return WGPUInstanceBackend_Vulkan;
    case Backend::Gles: return WGPUInstanceBackend_GL;
    case Backend::Metal: return WGPUInstanceBackend_Metal;
    case Backend::D3D12: return WGPUInstanceBackend_DX12;
    default: return WGPUInstanceBackend_All;
  }
}

static Backend parse_backend(const std::string& s) {
  if (s == "vulkan") return Backend::Vulkan;
  if (s == "gles" || s == "gl" || s == "opengl") return Backend::Gles;
  if (s == "metal") return Backend::Metal;
  if (s == "d3d12" || s == "dx12") return Backend::D3D12;
  if (s.empty() || s == "auto") return Backend::Auto;
  throw Error(ErrorKind::Value,
              "SURFGRAD_BACKEND='" + s + "' is not a backend; use vulkan, gles, metal, d3d12 or auto");
}

// Higher is better: real GPUs over CPU emulation, native APIs over OpenGL.
static int adapter_score(const WGPUAdapterInfo& info) {
  int type = info.adapterType == WGPUAdapterType_DiscreteGPU     ? 4
             : info.adapterType == WGPUAdapterType_IntegratedGPU ? 3
             : info.adapterType == WGPUAdapterType_CPU           ? 1
                                                                 : 2;
  bool native = info.backendType == WGPUBackendType_Vulkan || info.backendType == WGPUBackendType_Metal ||
                info.backendType == WGPUBackendType_D3D12;
  return type * 2 + (native ? 1 : 0);
}

std::shared_ptr<Context> Context::create(const ContextOptions& options_in) {
  ContextOptions options = options_in;
  if (const char* env = std::getenv("SURFGRAD_BACKEND"); env && options.backend == Backend::Auto)
    options.backend = parse_backend(env);
  if (const char* env = std::getenv("SURFGRAD_ADAPTER"); env && options.adapter.empty()) options.adapter = env;

  auto impl = std::make_unique<Impl>();
  const char* checked = std::getenv("SURFGRAD_CHECKED_KERNELS");
  const bool keep_checks = checked && *checked && std::string(checked) != "0";
  impl->trust_validated = options.trust_validated_kernels && !keep_checks;
  impl->unchecked_device =
      options.own_kernels_only && !keep_checks && api().implementation == WebGpuImplementation::Dawn;
  uint32_t backends = backend_mask(options.backend);
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  auto t_step = Clock::now();
  impl->instance = create_instance(backends);
  impl->instance_ms = ms_since(t_step);
  t_step = Clock::now();
  if (!impl->instance)
    throw Error(ErrorKind::Device, std::string("wgpuCreateInstance failed (") +
                                       implementation_name(api().implementation) +
                                       "); is the WebGPU library the one surfgrad was built against?");
  std::vector<WGPUAdapter> adapters = enumerate_adapters(impl->instance, backends);
  int best_score = -1;
  std::string seen;
  // "#N" picks the N-th adapter of the enumeration: identical GPUs of one host share a name, and
  // NVIDIA's Vulkan driver lists every GPU whatever CUDA_VISIBLE_DEVICES says (checked on a
  // two-H200 host, BENCHMARKS.md).
  long index = -1;
  if (options.adapter.size() > 1 && options.adapter[0] == '#') {
    char* end = nullptr;
    index = std::strtol(options.adapter.c_str() + 1, &end, 10);
    if (*end != '\0' || index < 0)
      throw Error(ErrorKind::Value, "adapter '" + options.adapter + "': '#' must be followed by an index, e.g. #1");
  }
  for (size_t at = 0; at < adapters.size(); ++at) {
    WGPUAdapter a = adapters[at];
    WGPUAdapterInfo ai = WGPU_ADAPTER_INFO_INIT;
    api().wgpuAdapterGetInfo(a, &ai);
    std::string name = to_std(ai.device);
    seen += (seen.empty() ? "#" : ", #") + std::to_string(at) + " " + name + " (" + backend_name(ai.backendType) + ")";
    bool wanted =
        index >= 0 ? long(at) == index : options.adapter.empty() || name.find(options.adapter) != std::string::npos;
    int score = adapter_score(ai);
    if (wanted && score > best_score) {
      if (impl->adapter) api().wgpuAdapterRelease(impl->adapter);
      impl->adapter = a;
      best_score = score;
    } else {
      api().wgpuAdapterRelease(a);
    }
    api().wgpuAdapterInfoFreeMembers(ai);
  }
  if (!impl->adapter) {
    if (!options.adapter.empty())
      throw Error(ErrorKind::Device,
                  "no adapter matches '" + options.adapter + "'; available: " + (seen.empty() ? "none" : seen));
    throw Error(ErrorKind::Device,
                "no WebGPU adapter found. Install a Vulkan driver (on Debian: mesa-vulkan-drivers >= 25 "
                "from bookworm-backports, which gives the lavapipe CPU driver), or set SURFGRAD_BACKEND=gles");
  }

  impl->adapters_ms = ms_since(t_step);
  // Adapter facts.
  WGPUAdapterInfo ai = WGPU_ADAPTER_INFO_INIT;
  api().wgpuAdapterGetInfo(impl->adapter, &ai);
  AdapterInfo& info = impl->info;
  info.name = to_std(ai.device);
  info.vendor = to_std(ai.vendor);
  info.architecture = to_std(ai.architecture);
  info.description = to_std(ai.description);
  info.driver = info.description;
  info.backend = backend_name(ai.backendType);
  info.adapter_type = adapter_type_name(ai.adapterType);
  info.is_cpu = ai.adapterType == WGPUAdapterType_CPU;
  info.implementation = implementation_version();
  impl->features.subgroup_min_size = ai.subgroupMinSize;
  impl->features.subgroup_max_size = ai.subgroupMaxSize;
  api().wgpuAdapterInfoFreeMembers(ai);
  if (info.is_cpu && !options.quiet)
    std::fprintf(stderr, "surfgrad: no GPU adapter found, running on the CPU through %s (%s)\n", info.name.c_str(),
                 info.backend.c_str());

  auto adapter_features = supported([&] {
    WGPUSupportedFeatures sf = {};
    api().wgpuAdapterGetFeatures(impl->adapter, &sf);
    return sf;
  }());
  auto has = [&](uint32_t f) {
    return std::any_of(adapter_features.begin(), adapter_features.end(), [&](WGPUFeatureName x) { return x == f; });
  };
  for (auto f : adapter_features) impl->features.adapter_features.push_back(feature_name(f));
  std::vector<WGPUFeatureName> required;
  for (uint32_t f : {uint32_t(WGPUFeatureName_Subgroups), uint32_t(WGPUNativeFeature_Subgroup),
                     uint32_t(WGPUFeatureName_TimestampQuery), uint32_t(WGPUNativeFeature_ShaderFloat32Atomic)})
    if (has(f)) required.push_back(static_cast<WGPUFeatureName>(f));
  if (options.request_f16 && has(WGPUFeatureName_ShaderF16)) required.push_back(WGPUFeatureName_ShaderF16);
  if (const char* env = std::getenv("SURFGRAD_COOPERATIVE_MATRIX"); env && *env)
    options.request_cooperative_matrix = std::string(env) != "0";
  impl->features.cooperative_matrix_offered = has(WGPUNativeFeature_CooperativeMatrix);
  if (options.request_cooperative_matrix && impl->features.cooperative_matrix_offered)
    required.push_back(static_cast<WGPUFeatureName>(WGPUNativeFeature_CooperativeMatrix));
  // Dawn's subgroup matrices (tensor cores): asked for wherever offered, with f16 and subgroups,
  // which every kernel on them needs.
  if (has(dawn::kFeatureSubgroupMatrix) && has(WGPUFeatureName_Subgroups)) {
    std::string why;
    impl->features.subgroup_matrix_configs = dawn_subgroup_matrix_configs(impl->adapter, &why);
    if (!impl->features.subgroup_matrix_configs.empty())
      required.push_back(static_cast<WGPUFeatureName>(dawn::kFeatureSubgroupMatrix));
    else if (!options.quiet && !why.empty())
      std::fprintf(stderr, "surfgrad: %s\n", why.c_str());
  }

  // Request the adapter's full limits: WebGPU's defaults (128 MiB bindings) are far below what
  // GPUs allow.
  WGPULimits limits = WGPU_LIMITS_INIT;
  api().wgpuAdapterGetLimits(impl->adapter, &limits);

  // Dawn keeps what it compiles (Tint's output, pipeline caches) in a blob cache on disk across
  // runs; wgpu-native's C API has no such hook (pipeline_cache.hpp).
  const std::string cache_scope = pipeline_cache_scope(info);
  if (api().implementation == WebGpuImplementation::Dawn) impl->pipeline_store = pipeline_blob_store(cache_scope);

  struct DeviceResult {
    WGPUDevice device = nullptr;
    std::string message;
    bool done = false;
  };
  auto request_device = [&](const std::vector<WGPUFeatureName>& features) {
    WGPUDeviceDescriptor ddesc = WGPU_DEVICE_DESCRIPTOR_INIT;
    ddesc.requiredFeatureCount = features.size();
    ddesc.requiredFeatures = features.data();
    ddesc.requiredLimits = &limits;
    dawn::CacheDeviceDescriptor cache_desc;
    ddesc.nextInChain = dawn_cache_chain(impl->pipeline_store, cache_scope, device_chain(impl->unchecked_device),
                                         cache_desc);  // Dawn's toggles (and blob cache)
    ddesc.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
    ddesc.deviceLostCallbackInfo.callback = on_device_lost;
    ddesc.deviceLostCallbackInfo.userdata1 = impl.get();
    ddesc.uncapturedErrorCallbackInfo.callback = on_uncaptured_error;
    ddesc.uncapturedErrorCallbackInfo.userdata1 = impl.get();
    CallbackSlot<DeviceResult> slot;
    WGPURequestDeviceCallbackInfo cb = WGPU_REQUEST_DEVICE_CALLBACK_INFO_INIT;
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = [](WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message, void* ud, void*) {
      auto r = CallbackSlot<DeviceResult>::from_userdata(ud);
      r->done = true;
      if (status == WGPURequestDeviceStatus_Success) r->device = device;
      r->message = to_std(message);
    };
    cb.userdata1 = slot.userdata();
    api().wgpuAdapterRequestDevice(impl->adapter, &ddesc, cb);
    for (int i = 0; i < 100000 && !slot.state->done; ++i) api().wgpuInstanceProcessEvents(impl->instance);
    DeviceResult result = *slot.state;
    if (!result.done) result.message = "no answer from the WebGPU implementation";
    return result;
  };
  t_step = Clock::now();
  DeviceResult result = request_device(required);
  if (!result.device && options.request_cooperative_matrix && impl->features.cooperative_matrix_offered) {
    // wgpu-native 29.0.1.1 offers the feature but refuses it: it is one of wgpu's "experimental"
    // features, and its C API has no way to opt in to those ("Some experimental features,
    // EXPERIMENTAL_COOPERATIVE_MATRIX, were requested, but experimental features are not
    // enabled"). Keep the reason and carry on without it.
    impl->features.cooperative_matrix_refusal = result.message;
    required.erase(std::remove(required.begin(), required.end(),
                               static_cast<WGPUFeatureName>(WGPUNativeFeature_CooperativeMatrix)),
                   required.end());
    result = request_device(required);
  }
  for (auto f : required) impl->requested_features.push_back(uint32_t(f));
  if (!result.device)
    throw Error(ErrorKind::Device, "requesting a device from '" + info.name + "' failed: " + result.message);
  impl->device = result.device;
  impl->device_ms = ms_since(t_step);
  impl->queue = api().wgpuDeviceGetQueue(impl->device);

  auto device_features = supported([&] {
    WGPUSupportedFeatures sf = {};
    api().wgpuDeviceGetFeatures(impl->device, &sf);
    return sf;
  }());
  for (auto f : device_features) {
    impl->features.device_features.push_back(feature_name(f));
    if (f == WGPUFeatureName_ShaderF16) impl->features.shader_f16 = true;
    if (f == WGPUFeatureName_Subgroups || uint32_t(f) == uint32_t(WGPUNativeFeature_Subgroup))
      impl->features.subgroups = true;
    if (f == WGPUFeatureName_TimestampQuery) impl->features.timestamp_query = true;
    if (uint32_t(f) == uint32_t(WGPUNativeFeature_ShaderFloat32Atomic)) impl->features.float32_atomics = true;
    if (uint32_t(f) == uint32_t(WGPUNativeFeature_CooperativeMatrix)) impl->features.cooperative_matrix = true;
    if (uint32_t(f) == dawn::kFeatureSubgroupMatrix) impl->features.subgroup_matrix = true;
  }
  WGPULimits dl = WGPU_LIMITS_INIT;
  api().wgpuDeviceGetLimits(impl->device, &dl);
  Limits& L = impl->limits;
  L.max_buffer_size = dl.maxBufferSize;
  L.max_storage_buffer_binding_size = dl.maxStorageBufferBindingSize;
  if (options.max_binding_bytes) {
    L.max_storage_buffer_binding_size =
        std::min<uint64_t>(L.max_storage_buffer_binding_size, options.max_binding_bytes);
    L.max_buffer_size = std::min<uint64_t>(L.max_buffer_size, options.max_binding_bytes);
  }
  L.max_storage_buffers_per_shader_stage = dl.maxStorageBuffersPerShaderStage;
  L.min_storage_buffer_offset_alignment = dl.minStorageBufferOffsetAlignment;
  L.max_compute_workgroups_per_dimension = dl.maxComputeWorkgroupsPerDimension;
  L.max_compute_invocations_per_workgroup = dl.maxComputeInvocationsPerWorkgroup;
  L.max_compute_workgroup_storage_size = dl.maxComputeWorkgroupStorageSize;
  L.max_compute_workgroup_size_x = dl.maxComputeWorkgroupSizeX;
  impl->max_groups_per_dim = dl.maxComputeWorkgroupsPerDimension;
  impl->min_uniform_offset_alignment = dl.minUniformBufferOffsetAlignment;
  if (options.max_workgroups_per_dimension)
    impl->max_groups_per_dim = std::min(impl->max_groups_per_dim, options.max_workgroups_per_dimension);
  impl->pool = std::make_shared<BufferPool>(impl->device);
  if (const char* env = std::getenv("SURFGRAD_PROFILE"); env && *env && std::string(env) != "0") {
    if (!impl->features.timestamp_query) {
      std::fprintf(stderr, "surfgrad: SURFGRAD_PROFILE is set but %s has no timestamp queries; not profiling\n",
                   impl->info.name.c_str());
    } else {
      WGPUQuerySetDescriptor qd = WGPU_QUERY_SET_DESCRIPTOR_INIT;
      qd.type = WGPUQueryType_Timestamp;
      qd.count = 4096;  // WebGPU allows at most 4,096 queries a set: 2,048 dispatches a read-back
      impl->profile.set = api().wgpuDeviceCreateQuerySet(impl->device, &qd);
      impl->profile.capacity = qd.count;
      impl->profile.on = true;
      impl->profile.report_path = std::string(env) == "1" ? "" : env;
    }
  }
  auto ctx = std::shared_ptr<Context>(new Context(std::move(impl)));
  ctx->measure_subgroup_size();
  return ctx;
}

Context::Context(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Context::~Context() {
  // SURFGRAD_PROFILE's table, where it was asked for (never an exception out of a destructor).
  if (!impl_ || !impl_->profile.on || impl_->profile.written) return;
  try {
    write_profile();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "surfgrad: %s\n", e.what());
  }
}

Context::Impl::~Impl() {
  builds.stop();  // prewarm's worker threads use the device
  if (encoder) {
    close_pass();
    api().wgpuCommandEncoderRelease(encoder);
  }
  clear_bind_groups();
  kernels.clear();
  keyed_kernels.clear();
  meta_chunk.reset();
  fault.reset();
  batch_keepalive.clear();
  meta_free.clear();
  if (pool) pool->trim();
  if (query_set) api().wgpuQuerySetRelease(query_set);
  if (profile.set) api().wgpuQuerySetRelease(profile.set);
  if (queue) api().wgpuQueueRelease(queue);
  if (device) api().wgpuDeviceRelease(device);
  if (adapter) api().wgpuAdapterRelease(adapter);
  if (instance) api().wgpuInstanceRelease(instance);
}

const AdapterInfo& Context::info() const { return impl_->info; }
const Features& Context::features() const { return impl_->features; }
const Limits& Context::limits() const { return impl_->limits; }
uint32_t Context::max_workgroups_per_dimension() const { return impl_->max_groups_per_dim; }

std::string Context::wgsl_preamble(bool f16, bool subgroups, bool cooperative_matrix) const {
  if (f16 && !impl_->features.shader_f16)
    throw Error(ErrorKind::Unsupported, "this adapter (" + impl_->info.name +
                                            ") has no shader-f16; use f32 tensors (cast with .cast(DType::f32))");
  if (subgroups && !impl_->features.subgroups)
    throw Error(ErrorKind::Unsupported, "this adapter (" + impl_->info.name + ") has no subgroups");
  if (cooperative_matrix && !impl_->features.cooperative_matrix)
    throw Error(ErrorKind::Unsupported,
                "this device (" + impl_->info.name + ") was created without cooperative matrices" +
                    (impl_->features.cooperative_matrix_offered
                         ? std::string(" (the adapter offers them: set ContextOptions::request_cooperative_matrix "
                                       "or SURFGRAD_COOPERATIVE_MATRIX=1)")
                         : std::string(" (the adapter does not offer wgpu-native's CooperativeMatrix feature)")));
  // WGSL dialects: standard WGSL (Dawn, browsers) needs `enable subgroups;`; naga, the WGSL
  // compiler of wgpu-native 29, rejects that directive and enables subgroup builtins through
  // the device feature alone.
  std::string s;
  if (f16) s += "enable f16;\n";
  (void)subgroups;  // Dawn's `enable subgroups;` is added where a kernel uses them (wgsl_dialect.cpp)
  if (cooperative_matrix) s += "enable wgpu_cooperative_matrix;\n";
  return s;
}

// wgpu-native leaves WGPUAdapterInfo's subgroup sizes at 0; ask a kernel instead.
void Context::measure_subgroup_size() {
  Features& f = impl_->features;
  if (!f.subgroups || f.subgroup_min_size) return;
  auto buf = alloc(4, "subgroup probe");
  auto k = kernel(wgsl_preamble(false, true) +
                      "@group(0) @binding(0) var<storage, read_write> out: array<u32>;\n"
                      "@compute @workgroup_size(1) fn main(@builtin(subgroup_size) s: u32) { out[0] = s; }",
                  "main");
  dispatch(k, {buf.get()}, {}, {1, 1, 1});
  uint32_t size = 0;
  download(*buf, &size, 4);
  f.subgroup_min_size = f.subgroup_max_size = size;
}

std::vector<std::string> Context::verify_header_matches_library() const {
  std::vector<std::string> problems;
  constexpr uint8_t kCanary = 0xA5;
  struct GuardedLimits {
    uint8_t before[64];
    WGPULimits limits;
    uint8_t after[64];
  };
  auto check_limits = [&](const char* who, bool device) {
    GuardedLimits g;
    std::memset(&g, kCanary, sizeof g);
    g.limits = WGPU_LIMITS_INIT;
    WGPUStatus status = device ? api().wgpuDeviceGetLimits(impl_->device, &g.limits)
                               : api().wgpuAdapterGetLimits(impl_->adapter, &g.limits);
    if (status != WGPUStatus_Success) problems.push_back(std::string(who) + " limits: call failed");
    for (uint8_t b : g.before)
      if (b != kCanary) {
        problems.push_back(std::string(who) + " limits: bytes before the struct were overwritten");
        break;
      }
    for (uint8_t b : g.after)
      if (b != kCanary) {
        problems.push_back(std::string(who) + " limits: the library wrote past the end of WGPULimits");
        break;
      }
    const WGPULimits& l = g.limits;
    auto pow2 = [](uint64_t x) { return x && !(x & (x - 1)); };
    if (l.maxComputeWorkgroupSizeX < 64 || l.maxComputeWorkgroupSizeX > 65536 ||
        l.maxComputeInvocationsPerWorkgroup < 64 || l.maxComputeInvocationsPerWorkgroup > 65536 ||
        !pow2(l.minStorageBufferOffsetAlignment) || l.minStorageBufferOffsetAlignment > 4096 || l.maxBindGroups < 4 ||
        l.maxBindGroups > 64)
      problems.push_back(std::string(who) + " limits: implausible values (fields shifted?)");
    return l;
  };
  WGPULimits a = check_limits("adapter", false), d = check_limits("device", true);
  if (a.maxStorageBufferBindingSize != d.maxStorageBufferBindingSize || a.maxBufferSize != d.maxBufferSize)
    problems.push_back("device limits differ from the adapter's full limits that were requested");
  struct GuardedInfo {
    uint8_t before[64];
    WGPUAdapterInfo info;
    uint8_t after[64];
  } gi;
  std::memset(&gi, kCanary, sizeof gi);
  gi.info = WGPU_ADAPTER_INFO_INIT;
  api().wgpuAdapterGetInfo(impl_->adapter, &gi.info);
  for (uint8_t b : gi.after)
    if (b != kCanary) {
      problems.push_back("adapter info: the library wrote past the end of WGPUAdapterInfo");
      break;
    }
  if (gi.info.backendType == WGPUBackendType_Undefined || gi.info.backendType > WGPUBackendType_OpenGLES)
    problems.push_back("adapter info: backend type out of range");
  api().wgpuAdapterInfoFreeMembers(gi.info);
  WGPUSupportedFeatures sf = {};
  api().wgpuDeviceGetFeatures(impl_->device, &sf);
  auto device = supported(sf);
  for (uint32_t f : impl_->requested_features)
    if (std::none_of(device.begin(), device.end(), [&](WGPUFeatureName x) { return uint32_t(x) == f; }))
      problems.push_back("requested feature " + feature_name(WGPUFeatureName(f)) + " is missing on the device");
  if (api().implementation == WebGpuImplementation::Wgpu && wgpuGetVersion() == 0)
    problems.push_back("wgpuGetVersion returned 0");
  return problems;
}

void Context::destroy_device() {
  if (impl_->encoder) {  // drop unsubmitted work: it cannot run on a destroyed device
    impl_->close_pass();
    api().wgpuCommandEncoderRelease(impl_->encoder);
    impl_->encoder = nullptr;
  }
  api().wgpuDeviceDestroy(impl_->device);
  poll(impl_->instance, impl_->device, false);
  // WebGPU resolves device.lost with "destroyed" on destroy(); wgpu-native may deliver the
  // callback only at a later poll, so record the loss now.
  platform::LockGuard lock(impl_->error_mutex);
  if (!impl_->lost) {
    impl_->lost = true;
    impl_->lost_message = "destroyed";
  }
}

bool Context::device_lost() const {
  platform::LockGuard lock(impl_->error_mutex);
  return impl_->lost;
}

}  // namespace surfgrad::gpu

namespace surfgrad {
const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Shape: return "shape";
    case ErrorKind::DType: return "dtype";
    case ErrorKind::Value: return "value";
    case ErrorKind::Index: return "index";
    case ErrorKind::OutOfMemory: return "out-of-memory";
    case ErrorKind::LimitExceeded: return "limit";
    case ErrorKind::Unsupported: return "unsupported";
    case ErrorKind::ShaderCompile: return "shader compilation";
    case ErrorKind::DeviceLost: return "device lost";
    case ErrorKind::Device: return "device";
    case ErrorKind::IO: return "I/O";
    case ErrorKind::Cancelled: return "cancelled";
  }
  return "unknown";
}
}  // namespace surfgrad
