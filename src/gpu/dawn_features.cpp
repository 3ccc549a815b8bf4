// Dawn's subgroup-matrix configurations of an adapter (dawn_abi.hpp), as surfgrad's Features
// lists them.
#include "dawn_abi.hpp"
#include "impl.hpp"

namespace surfgrad::gpu {

static const char* component_name(dawn::ComponentType t) {
  switch (t) {
    case dawn::ComponentType::F32: return "f32";
    case dawn::ComponentType::F16: return "f16";
    case dawn::ComponentType::U32: return "u32";
    case dawn::ComponentType::I32: return "i32";
    case dawn::ComponentType::U8: return "u8";
    case dawn::ComponentType::I8: return "i8";
  }
  return "?";
}

std::vector<Features::SubgroupMatrixShape> dawn_subgroup_matrix_configs(WGPUAdapter adapter, std::string* error) {
  std::vector<Features::SubgroupMatrixShape> out;
  const WebGpuApi& A = api();
  // Dawn natively, or the browser's WebGPU (Chromium's is Dawn; the bridge fills the chained struct).
  if (A.implementation != WebGpuImplementation::Dawn && !kBrowserBuild) return out;
  dawn::AdapterPropertiesSubgroupMatrixConfigs props = {};
  props.chain.sType = static_cast<WGPUSType>(dawn::kSTypeAdapterPropertiesSubgroupMatrixConfigs);
  WGPUAdapterInfo info = WGPU_ADAPTER_INFO_INIT;
  info.nextInChain = &props.chain;
  if (A.wgpuAdapterGetInfo(adapter, &info) != WGPUStatus_Success) {
    if (error) *error = "Dawn refused the adapter's subgroup-matrix configs";
    return out;
  }
  for (size_t i = 0; i < props.configCount; ++i) {
    const dawn::SubgroupMatrixConfig& c = props.configs[i];
    out.push_back({component_name(c.componentType), component_name(c.resultComponentType), c.M, c.N, c.K});
  }
  A.wgpuAdapterInfoFreeMembers(info);
  reinterpret_cast<dawn::FreeSubgroupMatrixConfigs>(A.dawnFreeSubgroupMatrixConfigs)(props);
  return out;
}

}  // namespace surfgrad::gpu
