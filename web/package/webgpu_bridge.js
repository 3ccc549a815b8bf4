// webgpu.h over navigator.gpu: the wgpu* functions surfgrad.wasm imports, written to the same
// header the native build uses (wgpu-native's, from the PyPI `wgpu` wheel), so the library's C++
// does not change between the two. Struct offsets and enum values come from webgpu_layout.js,
// generated from that header at build time.
//
// The wasm32 C ABI, as seen from here: handles are integers (ids into `objects`); structs passed
// by value (callback infos, WGPUStringView arguments of callbacks) travel as pointers to a copy;
// uint64_t arguments and WGPUFuture results are BigInt; size_t is a 32-bit integer (SIZE_MAX
// arrives as -1: read with >>> 0).
//
// Waiting: the library waits on WebGPU by calling wgpuInstanceProcessEvents and wgpuDevicePoll
// in a loop until its callback has run. Here those two are JSPI imports
// (WebAssembly.Suspending): they await the promises in flight, then run the callbacks that are
// ready, so the C++ waits on GPU promises exactly as it waits on wgpu-native natively, while the
// page's event loop keeps running.
import { constants as C, structs } from './webgpu_layout.js';

// Dawn's own additions to webgpu.h that the library uses (src/gpu/dawn_abi.hpp has the same
// values; web/tests/bridge_dawn_abi.mjs checks that they agree): Chromium's WebGPU is Dawn, and
// its subgroup matrices (tensor cores) reach the library through these, as natively under Dawn.
const dawn = {
  featureSubgroupMatrix: 0x00050034,  // WGPUFeatureName_ChromiumExperimentalSubgroupMatrix
  sTypeSubgroupMatrixConfigs: 0x0005003B,  // WGPUSType_AdapterPropertiesSubgroupMatrixConfigs
  // WGPUSubgroupMatrixComponentType, by GPUSubgroupMatrixComponentType name.
  componentTypes: { f32: 1, f16: 2, u32: 3, i32: 4, u8: 5, i8: 6 },
};
export const dawnAbi = dawn;

// A struct's field offset; an unknown name is a bug in this file, caught on first use.
function at(struct, field) {
  const s = structs[struct];
  const offset = s && s[field];
  if (offset === undefined) throw new Error(`webgpu_bridge: ${struct}.${field} is not in webgpu_layout.js`);
  return offset;
}

const featureNames = new Map([
  [C.WGPUFeatureName_CoreFeaturesAndLimits, 'core-features-and-limits'],
  [C.WGPUFeatureName_DepthClipControl, 'depth-clip-control'],
  [C.WGPUFeatureName_Depth32FloatStencil8, 'depth32float-stencil8'],
  [C.WGPUFeatureName_TextureCompressionBC, 'texture-compression-bc'],
  [C.WGPUFeatureName_TextureCompressionBCSliced3D, 'texture-compression-bc-sliced-3d'],
  [C.WGPUFeatureName_TextureCompressionETC2, 'texture-compression-etc2'],
  [C.WGPUFeatureName_TextureCompressionASTC, 'texture-compression-astc'],
  [C.WGPUFeatureName_TextureCompressionASTCSliced3D, 'texture-compression-astc-sliced-3d'],
  [C.WGPUFeatureName_TimestampQuery, 'timestamp-query'],
  [C.WGPUFeatureName_IndirectFirstInstance, 'indirect-first-instance'],
  [C.WGPUFeatureName_ShaderF16, 'shader-f16'],
  [C.WGPUFeatureName_RG11B10UfloatRenderable, 'rg11b10ufloat-renderable'],
  [C.WGPUFeatureName_BGRA8UnormStorage, 'bgra8unorm-storage'],
  [C.WGPUFeatureName_Float32Filterable, 'float32-filterable'],
  [C.WGPUFeatureName_Float32Blendable, 'float32-blendable'],
  [C.WGPUFeatureName_ClipDistances, 'clip-distances'],
  [C.WGPUFeatureName_DualSourceBlending, 'dual-source-blending'],
  [C.WGPUFeatureName_Subgroups, 'subgroups'],
  [C.WGPUFeatureName_TextureFormatsTier1, 'texture-formats-tier1'],
  [C.WGPUFeatureName_TextureFormatsTier2, 'texture-formats-tier2'],
  [C.WGPUFeatureName_PrimitiveIndex, 'primitive-index'],
  [C.WGPUFeatureName_TextureComponentSwizzle, 'texture-component-swizzle'],
  [dawn.featureSubgroupMatrix, 'chromium-experimental-subgroup-matrix'],
]);
const featureIds = new Map([...featureNames].map(([id, name]) => [name, id]));
// A device descriptor's features and limits as one string, for comparing two (prefetchDevice).
const descriptorKey = (features, limits) => JSON.stringify([[...features].sort(), Object.entries(limits).sort()]);

// WGPULimits fields ↔ GPUSupportedLimits names (the same names), with their C width.
const limitFields = Object.keys(structs.WGPULimits).filter((k) => k !== '__size' && k !== 'nextInChain');
const wideLimits = new Set(['maxUniformBufferBindingSize', 'maxStorageBufferBindingSize', 'maxBufferSize']);

const errorTypes = { validation: C.WGPUErrorType_Validation, 'out-of-memory': C.WGPUErrorType_OutOfMemory,
                     internal: C.WGPUErrorType_Internal };
const errorFilters = new Map([[C.WGPUErrorFilter_Validation, 'validation'],
                              [C.WGPUErrorFilter_OutOfMemory, 'out-of-memory'],
                              [C.WGPUErrorFilter_Internal, 'internal']]);
const bindingTypes = new Map([[C.WGPUBufferBindingType_Uniform, 'uniform'],
                              [C.WGPUBufferBindingType_Storage, 'storage'],
                              [C.WGPUBufferBindingType_ReadOnlyStorage, 'read-only-storage']]);

// Destroying a buffer frees its memory in the GPU process's next tick, on the thread that also
// composites the page: a 1M × 768 map's input (31 blocks of 96 MiB, released after PCA) went in one
// tick of 89–138 ms on an H200 (Chromium trace: WebGPUDecoderImpl::PerformPollingWork), the page's
// longest frame gap (issue 32). So at most DESTROY_SLICE_BYTES go in one task, the next slice after
// a timer, each in a tick of its own (~10 ms).
const DESTROY_SLICE_BYTES = 256 * 2 ** 20;
function destroyInSlices(buffers, start = 0) {
  let i = start, bytes = 0;
  while (i < buffers.length && (bytes === 0 || bytes + buffers[i].size <= DESTROY_SLICE_BYTES))
    bytes += buffers[i].size, buffers[i++].destroy();
  if (i < buffers.length) setTimeout(() => destroyInSlices(buffers, i), 8);
}

export class WebGPUBridge {
  // adapter: a GPUAdapter the caller requested (requestAdapter is asynchronous; the library's
  // wgpuInstanceEnumerateAdapters is not, so the adapter is fetched before the module runs).
  constructor(adapter) {
    this.adapter = adapter;
    this.exports = null;  // the instance's exports, set once instantiated
    this.objects = [null];  // handle → object; 0 is the null handle
    this.freeIds = [];
    this.ready = [];  // callbacks whose promise has settled, run by the next ProcessEvents/Poll
    this.inFlight = new Set();  // promises not settled yet
    this.nextFuture = 1n;
    this.releasedBuffers = [];  // destroyed once the work submitted after their release is done
    this.mapped = new Map();  // buffer handle → [wasm pointer] of copied mapped ranges
    this.lost = null;
  }

  attach(exports) {
    this.exports = exports;
  }

  // ---- memory ------------------------------------------------------------------------------
  get memory() { return this.exports.memory.buffer; }
  view() { return new DataView(this.exports.memory.buffer); }
  u32(p) { return this.view().getUint32(p, true); }
  i32(p) { return this.view().getInt32(p, true); }
  u64(p) { return this.view().getBigUint64(p, true); }
  ptr(p) { return this.view().getUint32(p, true); }
  setU32(p, v) { this.view().setUint32(p, v, true); }
  setU64(p, v) { this.view().setBigUint64(p, BigInt(v), true); }

  // A WGPUStringView at address p → string ('' for null data).
  stringView(p) {
    const data = this.ptr(p);
    let length = this.u32(p + 4);
    return this.string(data, length);
  }
  string(data, length) {
    if (!data) return '';
    const bytes = new Uint8Array(this.memory);
    if (length === C.WGPU_STRLEN) {
      length = 0;
      while (bytes[data + length] !== 0) length++;
    }
    return new TextDecoder().decode(bytes.slice(data, data + length));
  }
  // A string copied into wasm memory (malloc); returns [pointer, byte length].
  allocString(text) {
    const encoded = new TextEncoder().encode(text);
    const p = this.exports.sg_alloc(encoded.length + 1);
    const bytes = new Uint8Array(this.memory, p, encoded.length + 1);
    bytes.set(encoded);
    bytes[encoded.length] = 0;
    return [p, encoded.length];
  }
  // A WGPUStringView {data, length} in fresh memory (for callback arguments); caller frees.
  allocStringView(text) {
    const [data, length] = this.allocString(text || '');
    const p = this.exports.sg_alloc(8);
    this.setU32(p, data);
    this.setU32(p + 4, length);
    return { p, free: () => { this.exports.sg_free(data); this.exports.sg_free(p); } };
  }

  // ---- handles -----------------------------------------------------------------------------
  put(object) {
    const id = this.freeIds.length ? this.freeIds.pop() : this.objects.length;
    this.objects[id] = object;
    return id;
  }
  get(id) {
    const o = this.objects[id];
    if (o === undefined || o === null) throw new Error(`webgpu_bridge: handle ${id} is not live`);
    return o;
  }
  drop(id) {
    if (!id) return;
    this.objects[id] = undefined;
    this.freeIds.push(id);
  }

  // ---- callbacks ---------------------------------------------------------------------------
  // A callback info struct (by value, so a pointer here) → a function that calls it later with
  // the given arguments (userdata1 and 2 appended).
  callbackFrom(infoPtr, struct) {
    const fn = this.ptr(infoPtr + at(struct, 'callback'));
    const ud1 = this.ptr(infoPtr + at(struct, 'userdata1'));
    const ud2 = this.ptr(infoPtr + at(struct, 'userdata2'));
    return fn ? (...args) => this.exports.__indirect_function_table.get(fn)(...args, ud1, ud2) : null;
  }
  // Tracks a promise; `settle` runs at the next ProcessEvents/Poll after it settles.
  track(promise, settle) {
    const tracked = promise.then((v) => ({ ok: true, v }), (e) => ({ ok: false, e }));
    this.inFlight.add(tracked);
    tracked.then((outcome) => {
      this.inFlight.delete(tracked);
      this.ready.push(() => settle(outcome));
    });
    const future = this.nextFuture++;
    return future;
  }
  runReady() {
    while (this.ready.length) this.ready.shift()();
  }
  // JSPI: returns a promise only when there is something to wait for, so a call with nothing in
  // flight does not suspend.
  processEvents() {
    if (this.ready.length || !this.inFlight.size) {
      this.runReady();
      return undefined;
    }
    // The settled promise's continuation (in track) queues its callback before this one runs.
    return Promise.race(this.inFlight).then(() => this.runReady());
  }
  async poll(wait) {  // always suspends (briefly, when not waiting): the loops calling it expect progress
    if (wait && this.device) await this.device.queue.onSubmittedWorkDone();
    this.runReady();
  }

  // ---- the imports -------------------------------------------------------------------------
  imports() {
    const b = this;
    const release = (id) => b.drop(id);
    const fn = {
      wgpuCreateInstance: () => b.put({ kind: 'instance' }),
      wgpuInstanceRelease: release,
      wgpuGetVersion: () => 0x1d000101,  // the header's version (wgpu-native 29.0.1.1); not a native library
      wgpuInstanceEnumerateAdapters: (instance, options, out) => {
        if (!b.adapter) return 0;
        if (out) b.setU32(out, b.put(b.adapter));
        return 1;
      },
      wgpuInstanceProcessEvents: () => b.processEvents(),
      wgpuAdapterRelease: release,
      wgpuAdapterGetInfo: (adapter, p) => {
        const info = b.get(adapter).info || {};
        const strings = [['vendor', info.vendor], ['architecture', info.architecture],
                         ['device', info.device || [info.vendor, info.architecture].filter(Boolean).join(' ')],
                         ['description', info.description]];
        for (const [field, text] of strings) {
          const [data, length] = b.allocString(text || '');
          b.setU32(p + at('WGPUAdapterInfo', field), data);
          b.setU32(p + at('WGPUAdapterInfo', field) + 4, length);
        }
        b.setU32(p + at('WGPUAdapterInfo', 'backendType'), C.WGPUBackendType_WebGPU);
        // The browser does not say whether its adapter is a CPU; SwiftShader is.
        const cpu = /swiftshader|llvmpipe|lavapipe/i.test(`${info.architecture} ${info.description} ${info.device}`);
        b.setU32(p + at('WGPUAdapterInfo', 'adapterType'), cpu ? C.WGPUAdapterType_CPU : C.WGPUAdapterType_Unknown);
        b.setU32(p + at('WGPUAdapterInfo', 'vendorID'), 0);
        b.setU32(p + at('WGPUAdapterInfo', 'deviceID'), 0);
        b.setU32(p + at('WGPUAdapterInfo', 'subgroupMinSize'), info.subgroupMinSize || 0);
        b.setU32(p + at('WGPUAdapterInfo', 'subgroupMaxSize'), info.subgroupMaxSize || 0);
        // Chained outputs: Dawn's subgroup-matrix configs (dawn_abi.hpp's
        // AdapterPropertiesSubgroupMatrixConfigs: chain {next, sType}, size_t count, pointer),
        // from adapter.info.subgroupMatrixConfigs where Chromium lists them.
        for (let c = b.ptr(p + at('WGPUAdapterInfo', 'nextInChain')); c; c = b.ptr(c)) {
          if (b.u32(c + 4) !== dawn.sTypeSubgroupMatrixConfigs) continue;
          const configs = [...(info.subgroupMatrixConfigs || [])]
            .filter((m) => m.componentType in dawn.componentTypes && m.resultComponentType in dawn.componentTypes);
          const list = configs.length ? b.exports.sg_alloc(20 * configs.length) : 0;
          configs.forEach((m, i) => {
            const e = list + 20 * i;
            b.setU32(e, dawn.componentTypes[m.componentType]);
            b.setU32(e + 4, dawn.componentTypes[m.resultComponentType]);
            b.setU32(e + 8, Number(m.M));
            b.setU32(e + 12, Number(m.N));
            b.setU32(e + 16, Number(m.K));
          });
          b.setU32(c + 8, configs.length);
          b.setU32(c + 12, list);
        }
        return C.WGPUStatus_Success;
      },
      // Dawn's: frees what the chained configs above allocated (the struct arrives by value: a
      // pointer to a copy).
      wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers: (props) => {
        const list = b.ptr(props + 12);
        if (list) b.exports.sg_free(list);
      },
      wgpuAdapterInfoFreeMembers: (p) => {
        for (const field of ['vendor', 'architecture', 'device', 'description'])
          b.exports.sg_free(b.ptr(p + at('WGPUAdapterInfo', field)));
      },
      wgpuAdapterGetFeatures: (adapter, p) => b.writeFeatures(b.get(adapter).features, p),
      wgpuDeviceGetFeatures: (device, p) => b.writeFeatures(b.get(device).features, p),
      wgpuSupportedFeaturesFreeMembers: (p) => b.exports.sg_free(b.ptr(p + at('WGPUSupportedFeatures', 'features'))),
      wgpuAdapterGetLimits: (adapter, p) => b.writeLimits(b.get(adapter).limits, p),
      wgpuDeviceGetLimits: (device, p) => b.writeLimits(b.get(device).limits, p),
      wgpuAdapterRequestDevice: (adapter, desc, info) => b.requestDevice(b.get(adapter), desc, info),
      wgpuDeviceGetQueue: (device) => b.put(b.get(device).queue),
      wgpuDeviceRelease: release,
      wgpuDeviceDestroy: (device) => b.get(device).destroy(),
      wgpuQueueRelease: release,
      wgpuDevicePoll: (device, wait) => b.poll(wait),
      wgpuDevicePushErrorScope: (device, filter) => b.get(device).pushErrorScope(errorFilters.get(filter) || 'validation'),
      wgpuDevicePopErrorScope: (device, info) => {
        const callback = b.callbackFrom(info, 'WGPUPopErrorScopeCallbackInfo');
        return b.track(b.get(device).popErrorScope(), ({ ok, v, e }) => {
          const type = !ok ? C.WGPUErrorType_Unknown
                       : !v ? C.WGPUErrorType_NoError
                       : errorTypes[v.constructor === GPUValidationError ? 'validation'
                                    : v.constructor === GPUOutOfMemoryError ? 'out-of-memory' : 'internal'];
          const message = b.allocStringView(!ok ? String(e && e.message || e) : v ? v.message : '');
          callback(ok ? C.WGPUPopErrorScopeStatus_Success : C.WGPUPopErrorScopeStatus_Error, type, message.p);
          message.free();
        });
      },
      wgpuDeviceCreateBuffer: (device, d) => {
        const size = b.u64(d + at('WGPUBufferDescriptor', 'size'));
        const usage = Number(b.u64(d + at('WGPUBufferDescriptor', 'usage')));
        return b.put(b.get(device).createBuffer({
          label: b.stringView(d + at('WGPUBufferDescriptor', 'label')) || undefined,
          size: Number(size), usage,
          mappedAtCreation: !!b.u32(d + at('WGPUBufferDescriptor', 'mappedAtCreation')),
        }));
      },
      wgpuBufferRelease: (id) => {
        // The buffer may still be used by work encoded but not yet submitted, or in flight:
        // destroy it only after the next submission's work is done.
        b.releasedBuffers.push(b.get(id));
        b.drop(id);
      },
      wgpuBufferMapAsync: (buffer, mode, offset, size, info) => {
        const callback = b.callbackFrom(info, 'WGPUBufferMapCallbackInfo');
        const length = size >>> 0 === C.WGPU_WHOLE_MAP_SIZE ? undefined : size >>> 0;
        return b.track(b.get(buffer).mapAsync(Number(mode), offset >>> 0, length), ({ ok, e }) => {
          const message = b.allocStringView(ok ? '' : String(e && e.message || e));
          callback(ok ? C.WGPUMapAsyncStatus_Success : C.WGPUMapAsyncStatus_Error, message.p);
          message.free();
        });
      },
      wgpuBufferGetConstMappedRange: (buffer, offset, size) => {
        // Mapped memory lives outside wasm memory: hand the C++ a copy.
        const length = size >>> 0 === C.WGPU_WHOLE_MAP_SIZE ? undefined : size >>> 0;
        const range = new Uint8Array(b.get(buffer).getMappedRange(offset >>> 0, length));
        const p = b.exports.sg_alloc(range.length);
        new Uint8Array(b.memory, p, range.length).set(range);
        if (!b.mapped.has(buffer)) b.mapped.set(buffer, []);
        b.mapped.get(buffer).push(p);
        return p;
      },
      wgpuBufferUnmap: (buffer) => {
        b.get(buffer).unmap();
        for (const p of b.mapped.get(buffer) || []) b.exports.sg_free(p);
        b.mapped.delete(buffer);
      },
      wgpuQueueWriteBuffer: (queue, buffer, offset, data, size) => {
        b.get(queue).writeBuffer(b.get(buffer), Number(offset), new Uint8Array(b.memory, data, size >>> 0));
      },
      wgpuDeviceCreateShaderModule: (device, d) => b.createShaderModule(device, d),
      wgpuDeviceCreateShaderModuleTrusted: (device, d) => b.createShaderModule(device, d),
      wgpuShaderModuleRelease: release,
      wgpuDeviceCreateBindGroupLayout: (device, d) => {
        const count = b.u32(d + at('WGPUBindGroupLayoutDescriptor', 'entryCount'));
        const base = b.ptr(d + at('WGPUBindGroupLayoutDescriptor', 'entries'));
        const size = structs.WGPUBindGroupLayoutEntry.__size;
        const entries = [];
        for (let i = 0; i < count; i++) {
          const e = base + i * size;
          const type = bindingTypes.get(b.u32(e + at('WGPUBindGroupLayoutEntry', 'buffer.type')));
          if (!type) throw new Error('webgpu_bridge: only buffer bindings are bridged');
          entries.push({
            binding: b.u32(e + at('WGPUBindGroupLayoutEntry', 'binding')),
            visibility: Number(b.u64(e + at('WGPUBindGroupLayoutEntry', 'visibility'))),
            buffer: {
              type,
              hasDynamicOffset: !!b.u32(e + at('WGPUBindGroupLayoutEntry', 'buffer.hasDynamicOffset')),
              minBindingSize: Number(b.u64(e + at('WGPUBindGroupLayoutEntry', 'buffer.minBindingSize'))),
            },
          });
        }
        return b.put(b.get(device).createBindGroupLayout({ entries }));
      },
      wgpuBindGroupLayoutRelease: release,
      wgpuDeviceCreatePipelineLayout: (device, d) => {
        const count = b.u32(d + at('WGPUPipelineLayoutDescriptor', 'bindGroupLayoutCount'));
        const base = b.ptr(d + at('WGPUPipelineLayoutDescriptor', 'bindGroupLayouts'));
        const layouts = [];
        for (let i = 0; i < count; i++) layouts.push(b.get(b.u32(base + 4 * i)));
        return b.put(b.get(device).createPipelineLayout({ bindGroupLayouts: layouts }));
      },
      wgpuPipelineLayoutRelease: release,
      // The synchronous build: Chromium compiles it on the GPU process's main thread, which also
      // composites the page (its frames stop meanwhile). The library builds through the async
      // one below; this stays for callers of webgpu.h's synchronous function.
      wgpuDeviceCreateComputePipeline: (device, d) =>
        b.put(b.get(device).createComputePipeline(b.computePipelineDescriptor(d))),
      // Compiled on Dawn's worker pool (off the GPU process's main thread, several at once). A
      // failure (GPUPipelineError: validation or internal) answers with its status and message.
      wgpuDeviceCreateComputePipelineAsync: (device, d, info) => {
        const callback = b.callbackFrom(info, 'WGPUCreateComputePipelineAsyncCallbackInfo');
        const promise = b.get(device).createComputePipelineAsync(b.computePipelineDescriptor(d));
        return b.track(promise, ({ ok, v, e }) => {
          const status = ok ? C.WGPUCreatePipelineAsyncStatus_Success
                         : e && e.reason === 'validation' ? C.WGPUCreatePipelineAsyncStatus_ValidationError
                         : C.WGPUCreatePipelineAsyncStatus_InternalError;
          const message = b.allocStringView(ok ? '' : String(e && e.message || e));
          callback(status, ok ? b.put(v) : 0, message.p);
          message.free();
        });
      },
      wgpuComputePipelineRelease: release,
      wgpuDeviceCreateBindGroup: (device, d) => {
        const count = b.u32(d + at('WGPUBindGroupDescriptor', 'entryCount'));
        const base = b.ptr(d + at('WGPUBindGroupDescriptor', 'entries'));
        const size = structs.WGPUBindGroupEntry.__size;
        const entries = [];
        for (let i = 0; i < count; i++) {
          const e = base + i * size;
          const bytes = b.u64(e + at('WGPUBindGroupEntry', 'size'));
          entries.push({
            binding: b.u32(e + at('WGPUBindGroupEntry', 'binding')),
            resource: {
              buffer: b.get(b.ptr(e + at('WGPUBindGroupEntry', 'buffer'))),
              offset: Number(b.u64(e + at('WGPUBindGroupEntry', 'offset'))),
              size: bytes === C.WGPU_WHOLE_SIZE ? undefined : Number(bytes),
            },
          });
        }
        return b.put(b.get(device).createBindGroup({
          layout: b.get(b.ptr(d + at('WGPUBindGroupDescriptor', 'layout'))), entries,
        }));
      },
      wgpuBindGroupRelease: release,
      wgpuDeviceCreateCommandEncoder: (device) => b.put(b.get(device).createCommandEncoder()),
      wgpuCommandEncoderRelease: release,
      wgpuCommandEncoderBeginComputePass: (encoder, d) => {
        const descriptor = {};
        const writes = d ? b.ptr(d + at('WGPUComputePassDescriptor', 'timestampWrites')) : 0;
        if (writes) {
          const S = 'WGPUPassTimestampWrites';
          descriptor.timestampWrites = {
            querySet: b.get(b.ptr(writes + at(S, 'querySet'))),
            beginningOfPassWriteIndex: b.u32(writes + at(S, 'beginningOfPassWriteIndex')),
            endOfPassWriteIndex: b.u32(writes + at(S, 'endOfPassWriteIndex')),
          };
          for (const k of ['beginningOfPassWriteIndex', 'endOfPassWriteIndex'])
            if (descriptor.timestampWrites[k] === 0xffffffff) delete descriptor.timestampWrites[k];
        }
        return b.put(b.get(encoder).beginComputePass(descriptor));
      },
      wgpuComputePassEncoderSetPipeline: (pass, pipeline) => b.get(pass).setPipeline(b.get(pipeline)),
      wgpuComputePassEncoderSetBindGroup: (pass, index, group, count, offsets) => {
        const dynamicOffsets = count ? Array.from(new Uint32Array(b.memory, offsets, count)) : [];
        b.get(pass).setBindGroup(index, group ? b.get(group) : null, dynamicOffsets);
      },
      wgpuComputePassEncoderDispatchWorkgroups: (pass, x, y, z) => b.get(pass).dispatchWorkgroups(x, y, z),
      wgpuComputePassEncoderDispatchWorkgroupsIndirect: (pass, buffer, offset) =>
        b.get(pass).dispatchWorkgroupsIndirect(b.get(buffer), Number(offset)),
      wgpuComputePassEncoderEnd: (pass) => b.get(pass).end(),
      wgpuComputePassEncoderRelease: release,
      wgpuCommandEncoderCopyBufferToBuffer: (encoder, src, srcOffset, dst, dstOffset, size) =>
        b.get(encoder).copyBufferToBuffer(b.get(src), Number(srcOffset), b.get(dst), Number(dstOffset), Number(size)),
      wgpuCommandEncoderResolveQuerySet: (encoder, querySet, first, count, dst, dstOffset) =>
        b.get(encoder).resolveQuerySet(b.get(querySet), first, count, b.get(dst), Number(dstOffset)),
      wgpuCommandEncoderFinish: (encoder) => b.put(b.get(encoder).finish()),
      wgpuCommandBufferRelease: release,
      wgpuQueueSubmit: (queue, count, commands) => {
        const buffers = [];
        for (let i = 0; i < count; i++) buffers.push(b.get(b.u32(commands + 4 * i)));
        const q = b.get(queue);
        q.submit(buffers);
        if (b.releasedBuffers.length) {
          const done = b.releasedBuffers;
          b.releasedBuffers = [];
          q.onSubmittedWorkDone().then(() => destroyInSlices(done));
        }
      },
      wgpuDeviceCreateQuerySet: (device, d) => b.put(b.get(device).createQuerySet({
        type: b.u32(d + at('WGPUQuerySetDescriptor', 'type')) === C.WGPUQueryType_Timestamp ? 'timestamp' : 'occlusion',
        count: b.u32(d + at('WGPUQuerySetDescriptor', 'count')),
      })),
      wgpuQuerySetRelease: (id) => { b.get(id).destroy(); b.drop(id); },
      wgpuQueueGetTimestampPeriod: () => 1.0,  // browsers report timestamps in nanoseconds
    };
    // Every import runs under one guard: a JavaScript exception thrown into the wasm would unwind
    // it without running its destructors; a WebGPU error belongs in the device's error state.
    const guarded = {};
    const calls = (this.calls = {});  // per import: how often the library called it (for profiling)
    for (const [name, f] of Object.entries(fn)) {
      calls[name] = 0;
      guarded[name] = (...args) => {
        calls[name]++;
        try {
          return f(...args);
        } catch (e) {
          throw new Error(`${name}: ${e && e.message || e}`);
        }
      };
    }
    for (const name of ['wgpuInstanceProcessEvents', 'wgpuDevicePoll']) {
      const f = fn[name];
      guarded[name] = new WebAssembly.Suspending((...args) => {
        calls[name]++;
        return f(...args);
      });
    }
    return guarded;
  }

  writeFeatures(features, p) {
    const ids = [...features].map((name) => featureIds.get(name)).filter((id) => id !== undefined);
    const array = this.exports.sg_alloc(4 * Math.max(ids.length, 1));
    ids.forEach((id, i) => this.setU32(array + 4 * i, id));
    this.setU32(p + at('WGPUSupportedFeatures', 'featureCount'), ids.length);
    this.setU32(p + at('WGPUSupportedFeatures', 'features'), array);
  }

  writeLimits(limits, p) {
    for (const name of limitFields) {
      const offset = p + at('WGPULimits', name);
      const value = limits[name];
      if (wideLimits.has(name)) this.setU64(offset, value === undefined ? C.WGPU_LIMIT_U64_UNDEFINED : BigInt(value));
      else this.setU32(offset, value === undefined ? C.WGPU_LIMIT_U32_UNDEFINED : value);
    }
    return C.WGPUStatus_Success;
  }

  // Requests now, while the wasm compiles (runtime.js), the device the library will ask for in
  // sg_init (context.cpp: subgroups, timestamp-query, shader-f16 and Dawn's subgroup matrices
  // where offered, the adapter's full limits). requestDevice takes it only if the library's
  // descriptor is exactly this one; else it is destroyed and the library's own is requested
  // from a new adapter (an adapter gives one device). `devicePrefetch` says which happened.
  prefetchDevice(powerPreference) {
    const a = this.adapter, has = (f) => a.features.has(f);
    const features = ['subgroups', 'timestamp-query', 'shader-f16'].filter(has);
    const matrices = [...(a.info?.subgroupMatrixConfigs || [])]
      .filter((m) => m.componentType in dawn.componentTypes && m.resultComponentType in dawn.componentTypes);
    if (has('chromium-experimental-subgroup-matrix') && has('subgroups') && matrices.length)
      features.push('chromium-experimental-subgroup-matrix');
    const limits = {};
    for (const name of limitFields) if (name in a.limits && a.limits[name] !== undefined) limits[name] = Number(a.limits[name]);
    const promise = a.requestDevice({ requiredFeatures: features, requiredLimits: limits });
    promise.catch(() => {});
    this.prefetched = { key: descriptorKey(features, limits), promise, powerPreference };
    this.devicePrefetch = 'requested';
  }

  // A prefetched device nobody took (init failed before sg_init asked for one): destroyed.
  dropPrefetch() {
    const pre = this.prefetched;
    this.prefetched = null;
    if (pre) pre.promise.then((unused) => unused.destroy(), () => {});
  }

  // The device with the features and limits the library asks for (it asks for the adapter's
  // full limits: browsers' defaults are 128 MiB storage bindings).
  requestDevice(adapter, d, info) {
    const callback = this.callbackFrom(info, 'WGPURequestDeviceCallbackInfo');
    const S = 'WGPUDeviceDescriptor';
    const requiredFeatures = [];
    const count = this.u32(d + at(S, 'requiredFeatureCount'));
    const features = this.ptr(d + at(S, 'requiredFeatures'));
    for (let i = 0; i < count; i++) {
      const name = featureNames.get(this.u32(features + 4 * i));
      if (name && adapter.features.has(name)) requiredFeatures.push(name);
    }
    const requiredLimits = {};
    const limitsPtr = this.ptr(d + at(S, 'requiredLimits'));
    if (limitsPtr) {
      for (const name of limitFields) {
        if (!(name in adapter.limits)) continue;
        const offset = limitsPtr + at('WGPULimits', name);
        const value = wideLimits.has(name) ? this.u64(offset) : this.u32(offset);
        if (value === C.WGPU_LIMIT_U64_UNDEFINED || value === C.WGPU_LIMIT_U32_UNDEFINED) continue;
        requiredLimits[name] = Number(value);
      }
    }
    const lost = this.callbackFrom(d + at(S, 'deviceLostCallbackInfo'), 'WGPUDeviceLostCallbackInfo');
    const uncaptured = this.callbackFrom(d + at(S, 'uncapturedErrorCallbackInfo'), 'WGPUUncapturedErrorCallbackInfo');
    const pre = this.prefetched;
    this.prefetched = null;
    // (from a new adapter: the prefetch consumed the first one, whatever its answer)
    const afresh = () => navigator.gpu.requestAdapter({ powerPreference: pre.powerPreference }).then((fresh) => {
      if (!fresh) throw new Error('navigator.gpu.requestAdapter() found no WebGPU adapter');
      return fresh.requestDevice({ requiredFeatures, requiredLimits });
    });
    let request;
    if (pre && adapter === this.adapter && pre.key === descriptorKey(requiredFeatures, requiredLimits)) {
      this.devicePrefetch = 'used';
      request = pre.promise.catch(() => {
        this.devicePrefetch = 'refused: requested again';
        return afresh();
      });
    } else if (pre) {
      this.devicePrefetch = 'not the library\'s descriptor: requested again';
      pre.promise.then((unused) => unused.destroy(), () => {});
      request = afresh();
    } else {
      request = adapter.requestDevice({ requiredFeatures, requiredLimits });
    }
    return this.track(request, ({ ok, v: device, e }) => {
      let handle = 0;
      if (ok) {
        this.device = device;
        handle = this.put(device);
        const handleCell = this.exports.sg_alloc(4);
        this.setU32(handleCell, handle);
        if (uncaptured) {
          device.addEventListener('uncapturederror', (event) => {
            this.ready.push(() => {
              const err = event.error;
              const type = err instanceof GPUValidationError ? C.WGPUErrorType_Validation
                           : err instanceof GPUOutOfMemoryError ? C.WGPUErrorType_OutOfMemory : C.WGPUErrorType_Internal;
              const message = this.allocStringView(err.message);
              uncaptured(handleCell, type, message.p);
              message.free();
            });
          });
        }
        device.lost.then((why) => {
          this.lost = why;
          if (!lost) return;
          this.ready.push(() => {
            const reason = why.reason === 'destroyed' ? C.WGPUDeviceLostReason_Destroyed : C.WGPUDeviceLostReason_Unknown;
            const message = this.allocStringView(why.message);
            lost(handleCell, reason, message.p);
            message.free();
          });
        });
      }
      const message = this.allocStringView(ok ? '' : String(e && e.message || e));
      callback(ok ? C.WGPURequestDeviceStatus_Success : C.WGPURequestDeviceStatus_Error, handle, message.p);
      message.free();
    });
  }

  // A WGPUComputePipelineDescriptor at address d → createComputePipeline(Async)'s descriptor.
  computePipelineDescriptor(d) {
    const S = 'WGPUComputePipelineDescriptor';
    const constants = {};
    const count = this.u32(d + at(S, 'compute.constantCount'));
    const base = this.ptr(d + at(S, 'compute.constants'));
    for (let i = 0; i < count; i++) {
      const e = base + i * structs.WGPUConstantEntry.__size;
      constants[this.stringView(e + at('WGPUConstantEntry', 'key'))] =
        this.view().getFloat64(e + at('WGPUConstantEntry', 'value'), true);
    }
    const layout = this.ptr(d + at(S, 'layout'));
    const entryPoint = this.stringView(d + at(S, 'compute.entryPoint'));
    return {
      layout: layout ? this.get(layout) : 'auto',
      compute: { module: this.get(this.ptr(d + at(S, 'compute.module'))), entryPoint: entryPoint || undefined,
                 constants },
    };
  }

  createShaderModule(device, d) {
    const chain = this.ptr(d + at('WGPUShaderModuleDescriptor', 'nextInChain'));
    if (!chain || this.u32(chain + at('WGPUChainedStruct', 'sType')) !== C.WGPUSType_ShaderSourceWGSL)
      throw new Error('only WGSL shader modules are bridged');
    const code = this.stringView(chain + at('WGPUShaderSourceWGSL', 'code'));
    return this.put(this.get(device).createShaderModule({ code }));
  }
}
