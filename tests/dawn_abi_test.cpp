// ABI canary for src/gpu/dawn_abi.hpp: the Dawn-only declarations surfgrad wrote itself (the Dawn
// package ships no header) checked against the loaded libwebgpu_dawn.so, so that a Dawn whose
// ABI moved fails here, loudly, instead of misreading structs. Runs under SURFGRAD_WEBGPU=dawn
// (scripts/run_tests.sh's Dawn stage); skipped, saying so, under wgpu-native.
#include "gpu/dawn_abi.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "gpu/impl.hpp"
#include "test_util.hpp"

using namespace surfgrad;
using namespace surfgrad::gpu;

namespace {

bool under_dawn() { return api().implementation == WebGpuImplementation::Dawn; }

// A Dawn instance and its recommended adapter, with or without the toggles descriptor.
struct RawAdapter {
  WGPUInstance instance = nullptr;
  WGPUAdapter adapter = nullptr;
  ~RawAdapter() {
    if (adapter) api().wgpuAdapterRelease(adapter);
    if (instance) api().wgpuInstanceRelease(instance);
  }
};

void open_adapter(RawAdapter& r, const dawn::TogglesDescriptor* toggles) {
  const WebGpuApi& A = api();
  WGPUInstanceDescriptor idesc = WGPU_INSTANCE_DESCRIPTOR_INIT;
  idesc.nextInChain = toggles ? const_cast<WGPUChainedStruct*>(&toggles->chain) : nullptr;
  r.instance = A.wgpuCreateInstance(&idesc);
  ASSERT_NE(r.instance, nullptr) << "Dawn refused an instance descriptor with DawnTogglesDescriptor (sType 0x"
                                 << std::hex << dawn::kSTypeTogglesDescriptor << "): the sType moved?";
  for (bool fallback : {false, true}) {
    WGPURequestAdapterOptions o = WGPU_REQUEST_ADAPTER_OPTIONS_INIT;
    o.nextInChain = toggles ? const_cast<WGPUChainedStruct*>(&toggles->chain) : nullptr;
    o.forceFallbackAdapter = fallback;
    CallbackSlot<WGPUAdapter> slot;
    WGPURequestAdapterCallbackInfo cb = WGPU_REQUEST_ADAPTER_CALLBACK_INFO_INIT;
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = [](WGPURequestAdapterStatus s, WGPUAdapter a, WGPUStringView, void* ud, void*) {
      *CallbackSlot<WGPUAdapter>::from_userdata(ud) = s == WGPURequestAdapterStatus_Success ? a : nullptr;
    };
    *slot.state = nullptr;
    cb.userdata1 = slot.userdata();
    A.wgpuInstanceRequestAdapter(r.instance, &o, cb);
    A.wgpuInstanceProcessEvents(r.instance);
    if ((r.adapter = *slot.state)) return;
  }
  FAIL() << "Dawn offered no adapter";
}

std::vector<uint32_t> adapter_features(WGPUAdapter a) {
  WGPUSupportedFeatures sf = {};
  api().wgpuAdapterGetFeatures(a, &sf);
  std::vector<uint32_t> out(sf.features, sf.features + sf.featureCount);
  api().wgpuSupportedFeaturesFreeMembers(sf);
  return out;
}

// The message of a refused device request for one feature.
std::string refusal(const RawAdapter& r, uint32_t feature) {
  WGPUFeatureName f = static_cast<WGPUFeatureName>(feature);
  WGPUDeviceDescriptor d = WGPU_DEVICE_DESCRIPTOR_INIT;
  d.requiredFeatureCount = 1;
  d.requiredFeatures = &f;
  struct Res {
    bool done = false, ok = false;
    std::string message;
    WGPUDevice device = nullptr;
  };
  CallbackSlot<Res> slot;
  WGPURequestDeviceCallbackInfo cb = WGPU_REQUEST_DEVICE_CALLBACK_INFO_INIT;
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPURequestDeviceStatus s, WGPUDevice dev, WGPUStringView m, void* ud, void*) {
    auto res = CallbackSlot<Res>::from_userdata(ud);
    res->done = true;
    res->ok = s == WGPURequestDeviceStatus_Success;
    res->device = dev;
    res->message = to_std(m);
  };
  cb.userdata1 = slot.userdata();
  api().wgpuAdapterRequestDevice(r.adapter, &d, cb);
  for (int i = 0; i < 1000 && !slot.state->done; ++i) api().wgpuInstanceProcessEvents(r.instance);
  if (slot.state->device) api().wgpuDeviceRelease(slot.state->device);
  return slot.state->ok ? "" : slot.state->message;
}

}  // namespace

TEST(DawnAbi, TogglesDescriptorIsRead) {
  if (!under_dawn()) GTEST_SKIP() << "SURFGRAD_WEBGPU is not dawn: the Dawn ABI canary runs in the Dawn stage";
  // allow_unsafe_apis shows Dawn's experimental features; if Dawn misread the descriptor
  // (sType or layout moved) the two feature lists would be equal.
  static const char* const on[] = {"allow_unsafe_apis"};
  dawn::TogglesDescriptor t = {};
  t.chain.sType = static_cast<WGPUSType>(dawn::kSTypeTogglesDescriptor);
  t.enabledToggleCount = 1;
  t.enabledToggles = on;
  RawAdapter plain, unsafe;
  ASSERT_NO_FATAL_FAILURE(open_adapter(plain, nullptr));
  ASSERT_NO_FATAL_FAILURE(open_adapter(unsafe, &t));
  auto a = adapter_features(plain.adapter), b = adapter_features(unsafe.adapter);
  EXPECT_GT(b.size(), a.size()) << "allow_unsafe_apis, passed through dawn::TogglesDescriptor, showed no "
                                   "experimental feature: Dawn's WGPUDawnTogglesDescriptor moved?";
  for (uint32_t f : a) EXPECT_NE(std::find(b.begin(), b.end(), f), b.end()) << std::hex << f;
}

TEST(DawnAbi, SubgroupMatrixFeatureValue) {
  if (!under_dawn()) GTEST_SKIP() << "SURFGRAD_WEBGPU is not dawn";
  // Dawn names a refused feature in its message: our value must be the one it calls
  // ChromiumExperimentalSubgroupMatrix (an adapter without it: "Invalid feature ... Chromium
  // ExperimentalSubgroupMatrix") or chromium-experimental-subgroup-matrix (an adapter with it,
  // refused for want of allow_unsafe_apis: "Feature chromium-experimental-subgroup-matrix is
  // guarded by toggle allow_unsafe_apis", seen on the H200).
  RawAdapter r;
  ASSERT_NO_FATAL_FAILURE(open_adapter(r, nullptr));  // without allow_unsafe_apis the feature is refused everywhere
  std::string m = refusal(r, dawn::kFeatureSubgroupMatrix);
  EXPECT_TRUE(m.find("ChromiumExperimentalSubgroupMatrix") != std::string::npos ||
              m.find("chromium-experimental-subgroup-matrix") != std::string::npos)
      << "Dawn's message for feature 0x" << std::hex << dawn::kFeatureSubgroupMatrix << ": '" << m
      << "' (WGPUFeatureName_ChromiumExperimentalSubgroupMatrix moved?)";
}

TEST(DawnAbi, SubgroupMatrixConfigsWhereOffered) {
  if (!under_dawn()) GTEST_SKIP() << "SURFGRAD_WEBGPU is not dawn";
  const Features& f = sgtest::ctx()->features();
  if (!f.subgroup_matrix)
    GTEST_SKIP() << "the adapter (" << sgtest::ctx()->info().name
                 << ") offers no chromium-experimental-subgroup-matrix: the config struct's stride is checked "
                    "where it does (the GPU machine)";
  // Read the raw configs: every field plausible in every element checks the 20-byte stride
  // (a 28-byte one, with min/max subgroup sizes, decoded garbage on the H200) and the enum values.
  RawAdapter r;
  static const char* const on[] = {"allow_unsafe_apis", "vulkan_enable_f16_on_nvidia"};
  dawn::TogglesDescriptor t = {};
  t.chain.sType = static_cast<WGPUSType>(dawn::kSTypeTogglesDescriptor);
  t.enabledToggleCount = 2;
  t.enabledToggles = on;
  ASSERT_NO_FATAL_FAILURE(open_adapter(r, &t));
  dawn::AdapterPropertiesSubgroupMatrixConfigs props = {};
  props.chain.sType = static_cast<WGPUSType>(dawn::kSTypeAdapterPropertiesSubgroupMatrixConfigs);
  WGPUAdapterInfo info = WGPU_ADAPTER_INFO_INIT;
  info.nextInChain = &props.chain;
  ASSERT_EQ(api().wgpuAdapterGetInfo(r.adapter, &info), WGPUStatus_Success);
  ASSERT_GT(props.configCount, 0u);
  auto pow2 = [](uint32_t x) { return x && !(x & (x - 1)); };
  bool f16_square = false;
  for (size_t i = 0; i < props.configCount; ++i) {
    const auto& c = props.configs[i];
    uint32_t ct = uint32_t(c.componentType), rt = uint32_t(c.resultComponentType);
    EXPECT_TRUE(ct >= 1 && ct <= 6 && rt >= 1 && rt <= 6) << "config " << i << ": types " << ct << "," << rt;
    EXPECT_TRUE(pow2(c.M) && pow2(c.N) && pow2(c.K) && c.M <= 64 && c.N <= 64 && c.K <= 64)
        << "config " << i << ": " << c.M << "x" << c.N << "x" << c.K;
    f16_square |= c.componentType == dawn::ComponentType::F16 && c.resultComponentType == dawn::ComponentType::F32;
  }
  api().wgpuAdapterInfoFreeMembers(info);
  reinterpret_cast<dawn::FreeSubgroupMatrixConfigs>(api().dawnFreeSubgroupMatrixConfigs)(props);
  EXPECT_EQ(props.configCount, f.subgroup_matrix_configs.size());
  if (sgtest::ctx()->features().shader_f16) {
    EXPECT_TRUE(f16_square) << "shader-f16 but no f16->f32 config";
  }
}
