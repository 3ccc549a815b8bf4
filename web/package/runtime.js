// The WebAssembly module and what every part of the JavaScript API shares: loading, the call
// queue, errors. surfgrad.js re-exports the public parts.
import { WebGPUBridge } from './webgpu_bridge.js';
import { wasiImports } from './wasi_shim.js';

// The tensor calls other than reads are plain calls: they never wait (web/src/tensor_web.cpp).
const suspending = ['sg_init', 'sg_map', 'sg_tensor_read', 'sg_realize', 'sg_tile_demo', 'sg_points_begin',
                    'sg_points_write', 'sg_points_builtin', 'sg_map_check', 'sg_map_held', 'sg_bench_matmul',
                    'sg_test_broken_kernel'];

// The running map's progress handler (maps.js sets it); the module imports it.
let mapProgress = () => 0;
export function setMapProgress(handler) {
  mapProgress = handler || (() => 0);
}

// surfgrad::ErrorKind, in order, as JavaScript names.
const errorKinds = ['shape', 'dtype', 'value', 'index', 'memory', 'limit', 'unsupported', 'shader', 'device-lost',
                    'device', 'io', 'cancelled'];

// Every error surfgrad raises: `kind` is one of the names above (or 'internal' for a bug); the
// message is the library's, the same as the CLI's and Python's.
export class SurfgradError extends Error {
  constructor(kind, message) {
    super(message);
    this.name = 'SurfgradError';
    this.kind = kind;
  }
}

export let module = null;  // { exports, bridge, info } once init() has run
let initializing = null;
let queue = Promise.resolve();  // calls into the module run one at a time
let running = null;  // the name of the queued call now running (suspended on the GPU, or in a callback)

// Runs `job` after every earlier call has finished: a call suspended on the GPU (JSPI) must not
// interleave with another one inside the C++. `name` says what runs, for the error of a tensor
// call made meanwhile (tensor calls do not queue: see immediate()).
export function serialized(job, name = 'an earlier call (a map, a tile example or a benchmark)') {
  const run = queue.then(() => {
    running = name;
    let result;
    try {
      result = job();
    } catch (e) {
      running = null;
      throw e;
    }
    // A synchronous job (a release queued while another call ran) is over now: awaiting it would
    // leave `running` set into the next microtask, refusing the tensor calls made there.
    if (!result || typeof result.then !== 'function') {
      running = null;
      return result;
    }
    return Promise.resolve(result).finally(() => { running = null; });
  });
  queue = run.catch(() => {});
  return run;
}

// Tensor calls run at once, in program order (tensor.js): synchronous ones record and never
// wait; reads wait without touching what other calls use, so tensor calls may run while a read
// waits. A queued call (a map, a tile example, a benchmark) that is running is in the middle of
// its own work in the C++: a tensor call then is refused, naming it.
export function immediate(what) {
  if (running)
    throw new SurfgradError('value', `${what}: ${running} is still running; await it before using tensors`);
  return requireModule(what);
}

// What queued call is running (its name), or null.
export function busy() {
  return running;
}

// A plain (synchronous) export that failed without a surfgrad error: it tried to wait on the GPU,
// which a synchronous call cannot (WebAssembly.SuspendError), or the module trapped.
export function internalError(what, e) {
  if (e instanceof SurfgradError) return e;
  return new SurfgradError('internal', `${what}: ${e && e.message || e} (a bug in surfgrad: please report it)`);
}

export function fail(exports) {
  const kind = exports.sg_error_kind();
  const message = readCString(exports, exports.sg_error_message());
  return new SurfgradError(kind >= 0 && kind < errorKinds.length ? errorKinds[kind] : 'internal', message);
}

export function readCString(exports, p) {
  const bytes = new Uint8Array(exports.memory.buffer);
  let end = p;
  while (bytes[end] !== 0) end++;
  return new TextDecoder().decode(bytes.slice(p, end));
}

export function resultJson(exports) {
  return JSON.parse(readCString(exports, exports.sg_result_json()));
}

// NUL-terminated copy of a string in wasm memory; free with sg_free.
export function cString(exports, text) {
  const encoded = new TextEncoder().encode(text);
  const p = exports.sg_alloc(encoded.length + 1);
  const bytes = new Uint8Array(exports.memory.buffer, p, encoded.length + 1);
  bytes.set(encoded);
  bytes[encoded.length] = 0;
  return p;
}

export function requireModule(what) {
  if (!module) throw new SurfgradError('value', `${what}: call await surfgrad.init() first`);
  return module;
}

/**
 * Loads surfgrad.wasm, requests a WebGPU adapter and creates the device with the limits the
 * library needs (the adapter's own, not the browser's defaults). Returns the device's facts.
 * Calling it again returns the same device.
 */
export function init(options = {}) {
  if (module) return Promise.resolve(module.info);
  if (!initializing) initializing = load(options).finally(() => { initializing = null; });
  return initializing;
}

// The wasm module, compiled from a streamed response: V8 keeps the code of a module over 128 KB
// compiled by compileStreaming beside the response in the HTTP cache, so a later page load that
// gets the response from the cache (fresh, or revalidated by the server: web/tools/serve.mjs and
// the benchmarks' server send ETag and Last-Modified) skips the compile. A server that sends
// another MIME type than application/wasm makes compileStreaming refuse: then from the bytes.
async function compileWasm(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  try {
    return await WebAssembly.compileStreaming(response);
  } catch (e) {
    if (!/mime|content-type|Incorrect response/i.test(String(e))) throw e;
    return WebAssembly.compile(await (await fetch(url)).arrayBuffer());
  }
}

async function load({ wasmUrl, wasmModule, powerPreference = 'high-performance', prewarm = true } = {}) {
  if (typeof WebAssembly.Suspending !== 'function' || typeof WebAssembly.promising !== 'function')
    throw new SurfgradError('unsupported', 'this browser lacks WebAssembly JSPI (WebAssembly.Suspending), which '
                            + 'surfgrad needs to wait on the GPU: use Chromium 137 or newer');
  const gpu = globalThis.navigator && navigator.gpu;
  if (!gpu) throw new SurfgradError('unsupported', 'this browser has no WebGPU (navigator.gpu): use a browser with '
                                    + 'WebGPU enabled (Chromium on Linux: --enable-unsafe-webgpu)');
  // init()'s parts in ms (info.initMs; a second page load pays them, a warm run does not: issue
  // 35). The wasm's fetch and compile start first and run while the adapter is requested.
  const t0 = performance.now(), ms = {};
  const since = (t) => Math.round((performance.now() - t) * 10) / 10;
  const url = wasmUrl || new URL('./surfgrad.wasm', import.meta.url);
  // wasmModule: surfgrad.wasm compiled by the caller (a WebAssembly.Module or a promise of one),
  // e.g. by a page's first script while its worker's modules load, posted to the worker.
  const compiled = (wasmModule ? Promise.resolve(wasmModule) : compileWasm(url)).then((m) => {
    // (Anything else, say the wasm's bytes, would instantiate into another shape and fail later
    // without naming the option.)
    if (!(m instanceof WebAssembly.Module))
      throw new SurfgradError('value', `init: wasmModule must be a WebAssembly.Module (or a promise of one), got ${
        Object.prototype.toString.call(m)}: compile surfgrad.wasm with WebAssembly.compileStreaming`);
    ms.compile = since(t0);
    return m;
  }, (e) => {
    throw new SurfgradError('io', `could not load ${wasmModule ? 'the wasmModule given' : url}: ${e.message || e}`);
  });
  compiled.catch(() => {});  // (awaited below; a rejection before then is not unhandled)
  const adapter = await gpu.requestAdapter({ powerPreference });
  ms.adapter = since(t0);
  if (!adapter) throw new SurfgradError('device', 'navigator.gpu.requestAdapter() found no WebGPU adapter');
  const bridge = new WebGPUBridge(adapter);
  bridge.prefetchDevice(powerPreference);  // made while the wasm compiles; sg_init takes it
  let instance, exports, t2;
  // A failure before sg_init takes the prefetched device (the wasm's compile or instantiation, or
  // sg_init itself) destroys that device: nothing else holds it.
  try {
    const imports = {
      env: bridge.imports(),
      wasi_snapshot_preview1: wasiImports(() => instance.exports.memory),
      surfgrad: { map_progress: (...args) => mapProgress(...args) },
    };
    const wasm = await compiled;
    const t1 = performance.now();
    try {
      instance = await WebAssembly.instantiate(wasm, imports);
    } catch (e) {
      throw new SurfgradError('io', `could not instantiate ${url}: ${e.message || e}`);
    }
    const raw = instance.exports;
    bridge.attach(raw);
    raw._initialize();
    ms.instantiate = since(t1);
    // prewarm: false: no kernel compiles ahead of its first use (each still compiles off the GPU
    // process's main thread); for comparisons and tests (web/src/prewarm_web.cpp).
    if (prewarm === false) raw.sg_set_prewarm(0);
    exports = {
      ...raw,
      memory: raw.memory,
    };
    // Exports that may wait on the GPU (directly, or by creating a kernel or a large buffer, whose
    // errors are awaited) return promises (JSPI); the rest are plain calls.
    for (const name of suspending) exports[name] = WebAssembly.promising(raw[name]);
    t2 = performance.now();
    if (await exports.sg_init() !== 0) throw fail(exports);
  } catch (e) {
    bridge.dropPrefetch();
    throw e;
  }
  ms.context = since(t2);  // the device's request and the library's context (sg_init)
  ms.total = since(t0);
  ms.devicePrefetch = bridge.devicePrefetch;  // 'used', or why not
  const device = resultJson(exports);
  const info = {
    ...device,
    backend: 'webgpu',
    implementation: `the browser's WebGPU (${navigator.userAgent.match(/(Chrome|Chromium|Firefox|Safari)\/[\d.]+/)?.[0]
                     || 'unknown browser'}) through surfgrad's webgpu.h bridge`,
    initMs: ms,
  };
  module = { exports, bridge, info };
  return info;
}

/** The device init() created, or throws if init() has not run. */
export function device() {
  return requireModule('device()').info;
}


/**
 * Counters for profiling: how often the module called each WebGPU function, its memory, and its
 * pipelines (built, built at first use rather than ahead, prewarmed, first uses that waited).
 */
export function stats() {
  const { bridge, exports } = requireModule('stats()');
  const p = exports.sg_startup_stats ? exports.sg_startup_stats() : 0;
  return { webgpuCalls: { ...bridge.calls }, wasmMemoryBytes: exports.memory.buffer.byteLength,
           pipelines: p ? JSON.parse(readCString(exports, p)) : null };
}
