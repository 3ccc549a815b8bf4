// Dawn-only declarations surfgrad needs, which wgpu-native's webgpu.h (the one the project builds
// against) lacks. Written from Dawn's documented C ABI (webgpu.h as generated from dawn.json,
// Dawn of Sep-Oct 2026; the values as the wgpudawn 0.32.0.4 bindings list them), not copied: the
// Dawn package surfgrad uses (PyPI rillfacet 0.1.3) ships no header. Dawn's own additions move
// between releases (the config struct gained min/max subgroup size in 2026), so
// tests/dawn_abi_test.cpp checks these against the loaded library and fails loudly if they moved.
#pragma once
#include <webgpu/webgpu.h>

#include <cstddef>
#include <cstdint>

namespace surfgrad::gpu::dawn {

// WGPUSType values (Dawn's range is 0x0005xxxx).
constexpr uint32_t kSTypeTogglesDescriptor = 0x0005000A;
constexpr uint32_t kSTypeAdapterPropertiesSubgroupMatrixConfigs = 0x0005003B;
// WGPUFeatureName_ChromiumExperimentalSubgroupMatrix ("chromium-experimental-subgroup-matrix").
constexpr uint32_t kFeatureSubgroupMatrix = 0x00050034;

// WGPUSubgroupMatrixComponentType.
enum class ComponentType : uint32_t { F32 = 1, F16 = 2, U32 = 3, I32 = 4, U8 = 5, I8 = 6 };

// WGPUDawnTogglesDescriptor: chained into instance, adapter-request and device descriptors.
struct TogglesDescriptor {
  WGPUChainedStruct chain;
  size_t enabledToggleCount;
  const char* const* enabledToggles;
  size_t disabledToggleCount;
  const char* const* disabledToggles;
};

// WGPUSubgroupMatrixConfig: one M×N×K shape of component → result types the adapter runs.
// rillfacet 0.1.3's Dawn has five 32-bit fields (no min/max subgroup size: read on an H200,
// 2026-11-27, where a 28-byte stride decoded the ten configs as garbage). The canary test checks
// every field of every element, so a library that moves this layout fails loudly.
struct SubgroupMatrixConfig {
  ComponentType componentType;
  ComponentType resultComponentType;
  uint32_t M, N, K;
};
static_assert(sizeof(SubgroupMatrixConfig) == 20, "Dawn's WGPUSubgroupMatrixConfig is five 32-bit fields");

// WGPUAdapterPropertiesSubgroupMatrixConfigs: chained into WGPUAdapterInfo (output); the adapter
// fills it when it has the feature (WGPUStatus_Error otherwise). Freed by the function below.
struct AdapterPropertiesSubgroupMatrixConfigs {
  WGPUChainedStruct chain;
  size_t configCount;
  const SubgroupMatrixConfig* configs;
};
using FreeSubgroupMatrixConfigs = void (*)(AdapterPropertiesSubgroupMatrixConfigs);

}  // namespace surfgrad::gpu::dawn
