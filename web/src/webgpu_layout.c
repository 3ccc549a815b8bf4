// Prints, as JSON, the byte layout of every webgpu.h struct the JavaScript bridge reads or writes
// and the enum values it translates, as this header lays them out for wasm32. The build runs it
// (under node's WASI) and writes web/package/webgpu_layout.js, so the bridge never hard-codes an
// offset: a header that moves a field moves the bridge with it, and a field the bridge names that
// is missing here fails the build's check (web/tools/check_bridge_layout.mjs).
#include <stddef.h>
#include <stdio.h>
#include <webgpu/webgpu.h>
#include <webgpu/wgpu.h>

static int first_struct = 1, first_field = 1;

static void begin(const char* name, size_t size) {
  printf("%s\n    \"%s\": {\"__size\": %zu", first_struct ? "" : ",", name, size);
  first_struct = 0;
}
static void field(const char* name, size_t offset) { printf(", \"%s\": %zu", name, offset); }
static void end(void) { printf("}"); }
static void constant(const char* name, unsigned long long value) {
  printf("%s\n    \"%s\": \"%llu\"", first_field ? "" : ",", name, value);
  first_field = 0;
}

#define STRUCT(T) begin(#T, sizeof(T))
#define F(T, f) field(#f, offsetof(T, f))
#define F2(T, a, b) field(#a "." #b, offsetof(T, a.b))
#define E(x) constant(#x, (unsigned long long)(x))

int main(void) {
  printf("{\n  \"structs\": {");
  STRUCT(WGPUStringView); F(WGPUStringView, data); F(WGPUStringView, length); end();
  STRUCT(WGPUChainedStruct); F(WGPUChainedStruct, next); F(WGPUChainedStruct, sType); end();
  STRUCT(WGPUAdapterInfo); F(WGPUAdapterInfo, nextInChain); F(WGPUAdapterInfo, vendor); F(WGPUAdapterInfo, architecture); F(WGPUAdapterInfo, device);
  F(WGPUAdapterInfo, description); F(WGPUAdapterInfo, backendType); F(WGPUAdapterInfo, adapterType);
  F(WGPUAdapterInfo, vendorID); F(WGPUAdapterInfo, deviceID); F(WGPUAdapterInfo, subgroupMinSize);
  F(WGPUAdapterInfo, subgroupMaxSize); end();
  STRUCT(WGPUSupportedFeatures); F(WGPUSupportedFeatures, featureCount); F(WGPUSupportedFeatures, features); end();
  STRUCT(WGPULimits);
  F(WGPULimits, maxTextureDimension1D); F(WGPULimits, maxTextureDimension2D); F(WGPULimits, maxTextureDimension3D);
  F(WGPULimits, maxTextureArrayLayers); F(WGPULimits, maxBindGroups); F(WGPULimits, maxBindGroupsPlusVertexBuffers);
  F(WGPULimits, maxBindingsPerBindGroup); F(WGPULimits, maxDynamicUniformBuffersPerPipelineLayout);
  F(WGPULimits, maxDynamicStorageBuffersPerPipelineLayout); F(WGPULimits, maxSampledTexturesPerShaderStage);
  F(WGPULimits, maxSamplersPerShaderStage); F(WGPULimits, maxStorageBuffersPerShaderStage);
  F(WGPULimits, maxStorageTexturesPerShaderStage); F(WGPULimits, maxUniformBuffersPerShaderStage);
  F(WGPULimits, maxUniformBufferBindingSize); F(WGPULimits, maxStorageBufferBindingSize);
  F(WGPULimits, minUniformBufferOffsetAlignment); F(WGPULimits, minStorageBufferOffsetAlignment);
  F(WGPULimits, maxVertexBuffers); F(WGPULimits, maxBufferSize); F(WGPULimits, maxVertexAttributes);
  F(WGPULimits, maxVertexBufferArrayStride); F(WGPULimits, maxInterStageShaderVariables);
  F(WGPULimits, maxColorAttachments); F(WGPULimits, maxColorAttachmentBytesPerSample);
  F(WGPULimits, maxComputeWorkgroupStorageSize); F(WGPULimits, maxComputeInvocationsPerWorkgroup);
  F(WGPULimits, maxComputeWorkgroupSizeX); F(WGPULimits, maxComputeWorkgroupSizeY);
  F(WGPULimits, maxComputeWorkgroupSizeZ); F(WGPULimits, maxComputeWorkgroupsPerDimension);
  F(WGPULimits, maxImmediateSize); end();
  STRUCT(WGPUDeviceDescriptor); F(WGPUDeviceDescriptor, requiredFeatureCount); F(WGPUDeviceDescriptor, requiredFeatures);
  F(WGPUDeviceDescriptor, requiredLimits); F(WGPUDeviceDescriptor, deviceLostCallbackInfo);
  F(WGPUDeviceDescriptor, uncapturedErrorCallbackInfo); end();
  STRUCT(WGPUDeviceLostCallbackInfo); F(WGPUDeviceLostCallbackInfo, mode); F(WGPUDeviceLostCallbackInfo, callback);
  F(WGPUDeviceLostCallbackInfo, userdata1); F(WGPUDeviceLostCallbackInfo, userdata2); end();
  STRUCT(WGPUUncapturedErrorCallbackInfo); F(WGPUUncapturedErrorCallbackInfo, callback);
  F(WGPUUncapturedErrorCallbackInfo, userdata1); F(WGPUUncapturedErrorCallbackInfo, userdata2); end();
  // The five callback infos the library passes share one shape; each is listed so a header that
  // changes one of them is caught.
  STRUCT(WGPURequestDeviceCallbackInfo); F(WGPURequestDeviceCallbackInfo, mode); F(WGPURequestDeviceCallbackInfo, callback);
  F(WGPURequestDeviceCallbackInfo, userdata1); F(WGPURequestDeviceCallbackInfo, userdata2); end();
  STRUCT(WGPUBufferMapCallbackInfo); F(WGPUBufferMapCallbackInfo, mode); F(WGPUBufferMapCallbackInfo, callback);
  F(WGPUBufferMapCallbackInfo, userdata1); F(WGPUBufferMapCallbackInfo, userdata2); end();
  STRUCT(WGPUPopErrorScopeCallbackInfo); F(WGPUPopErrorScopeCallbackInfo, mode); F(WGPUPopErrorScopeCallbackInfo, callback);
  F(WGPUPopErrorScopeCallbackInfo, userdata1); F(WGPUPopErrorScopeCallbackInfo, userdata2); end();
  STRUCT(WGPUCreateComputePipelineAsyncCallbackInfo); F(WGPUCreateComputePipelineAsyncCallbackInfo, mode);
  F(WGPUCreateComputePipelineAsyncCallbackInfo, callback); F(WGPUCreateComputePipelineAsyncCallbackInfo, userdata1);
  F(WGPUCreateComputePipelineAsyncCallbackInfo, userdata2); end();
  STRUCT(WGPUBufferDescriptor); F(WGPUBufferDescriptor, label); F(WGPUBufferDescriptor, usage); F(WGPUBufferDescriptor, size);
  F(WGPUBufferDescriptor, mappedAtCreation); end();
  STRUCT(WGPUShaderModuleDescriptor); F(WGPUShaderModuleDescriptor, nextInChain); F(WGPUShaderModuleDescriptor, label); end();
  STRUCT(WGPUShaderSourceWGSL); F(WGPUShaderSourceWGSL, chain); F(WGPUShaderSourceWGSL, code); end();
  STRUCT(WGPUComputePipelineDescriptor); F(WGPUComputePipelineDescriptor, label); F(WGPUComputePipelineDescriptor, layout);
  F2(WGPUComputePipelineDescriptor, compute, module); F2(WGPUComputePipelineDescriptor, compute, entryPoint);
  F2(WGPUComputePipelineDescriptor, compute, constantCount); F2(WGPUComputePipelineDescriptor, compute, constants); end();
  STRUCT(WGPUConstantEntry); F(WGPUConstantEntry, key); F(WGPUConstantEntry, value); end();
  STRUCT(WGPUPipelineLayoutDescriptor); F(WGPUPipelineLayoutDescriptor, bindGroupLayoutCount);
  F(WGPUPipelineLayoutDescriptor, bindGroupLayouts); end();
  STRUCT(WGPUBindGroupLayoutDescriptor); F(WGPUBindGroupLayoutDescriptor, entryCount); F(WGPUBindGroupLayoutDescriptor, entries); end();
  STRUCT(WGPUBindGroupLayoutEntry); F(WGPUBindGroupLayoutEntry, binding); F(WGPUBindGroupLayoutEntry, visibility);
  F2(WGPUBindGroupLayoutEntry, buffer, type); F2(WGPUBindGroupLayoutEntry, buffer, hasDynamicOffset);
  F2(WGPUBindGroupLayoutEntry, buffer, minBindingSize); end();
  STRUCT(WGPUBindGroupDescriptor); F(WGPUBindGroupDescriptor, layout); F(WGPUBindGroupDescriptor, entryCount);
  F(WGPUBindGroupDescriptor, entries); end();
  STRUCT(WGPUBindGroupEntry); F(WGPUBindGroupEntry, binding); F(WGPUBindGroupEntry, buffer); F(WGPUBindGroupEntry, offset);
  F(WGPUBindGroupEntry, size); end();
  STRUCT(WGPUComputePassDescriptor); F(WGPUComputePassDescriptor, timestampWrites); end();
  STRUCT(WGPUPassTimestampWrites); F(WGPUPassTimestampWrites, querySet); F(WGPUPassTimestampWrites, beginningOfPassWriteIndex);
  F(WGPUPassTimestampWrites, endOfPassWriteIndex); end();
  STRUCT(WGPUQuerySetDescriptor); F(WGPUQuerySetDescriptor, type); F(WGPUQuerySetDescriptor, count); end();
  printf("\n  },\n  \"constants\": {");
  E(WGPU_STRLEN); E(WGPU_WHOLE_SIZE); E(WGPU_WHOLE_MAP_SIZE); E(WGPU_LIMIT_U32_UNDEFINED); E(WGPU_LIMIT_U64_UNDEFINED);
  E(WGPUSType_ShaderSourceWGSL);
  E(WGPUFeatureName_CoreFeaturesAndLimits); E(WGPUFeatureName_DepthClipControl); E(WGPUFeatureName_Depth32FloatStencil8);
  E(WGPUFeatureName_TextureCompressionBC); E(WGPUFeatureName_TextureCompressionBCSliced3D);
  E(WGPUFeatureName_TextureCompressionETC2); E(WGPUFeatureName_TextureCompressionASTC);
  E(WGPUFeatureName_TextureCompressionASTCSliced3D); E(WGPUFeatureName_TimestampQuery);
  E(WGPUFeatureName_IndirectFirstInstance); E(WGPUFeatureName_ShaderF16); E(WGPUFeatureName_RG11B10UfloatRenderable);
  E(WGPUFeatureName_BGRA8UnormStorage); E(WGPUFeatureName_Float32Filterable); E(WGPUFeatureName_Float32Blendable);
  E(WGPUFeatureName_ClipDistances); E(WGPUFeatureName_DualSourceBlending); E(WGPUFeatureName_Subgroups);
  E(WGPUFeatureName_TextureFormatsTier1); E(WGPUFeatureName_TextureFormatsTier2); E(WGPUFeatureName_PrimitiveIndex);
  E(WGPUFeatureName_TextureComponentSwizzle);
  E(WGPUBackendType_WebGPU); E(WGPUAdapterType_DiscreteGPU); E(WGPUAdapterType_IntegratedGPU); E(WGPUAdapterType_CPU);
  E(WGPUAdapterType_Unknown);
  E(WGPUBufferBindingType_BindingNotUsed); E(WGPUBufferBindingType_Undefined); E(WGPUBufferBindingType_Uniform);
  E(WGPUBufferBindingType_Storage); E(WGPUBufferBindingType_ReadOnlyStorage);
  E(WGPUQueryType_Occlusion); E(WGPUQueryType_Timestamp);
  E(WGPUErrorFilter_Validation); E(WGPUErrorFilter_OutOfMemory); E(WGPUErrorFilter_Internal);
  E(WGPUErrorType_NoError); E(WGPUErrorType_Validation); E(WGPUErrorType_OutOfMemory); E(WGPUErrorType_Internal);
  E(WGPUErrorType_Unknown);
  E(WGPUPopErrorScopeStatus_Success); E(WGPUPopErrorScopeStatus_CallbackCancelled); E(WGPUPopErrorScopeStatus_Error);
  E(WGPUMapAsyncStatus_Success); E(WGPUMapAsyncStatus_CallbackCancelled); E(WGPUMapAsyncStatus_Error);
  E(WGPUMapAsyncStatus_Aborted);
  E(WGPUCreatePipelineAsyncStatus_Success); E(WGPUCreatePipelineAsyncStatus_CallbackCancelled);
  E(WGPUCreatePipelineAsyncStatus_ValidationError); E(WGPUCreatePipelineAsyncStatus_InternalError);
  E(WGPURequestDeviceStatus_Success); E(WGPURequestDeviceStatus_CallbackCancelled); E(WGPURequestDeviceStatus_Error);
  E(WGPUDeviceLostReason_Unknown); E(WGPUDeviceLostReason_Destroyed); E(WGPUDeviceLostReason_CallbackCancelled);
  E(WGPUDeviceLostReason_FailedCreation);
  E(WGPUStatus_Success); E(WGPUStatus_Error);
  printf("\n  }\n}\n");
  return 0;
}
