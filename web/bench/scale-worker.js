// The scale benchmark's worker (scale.html): maps builtinPoints(n) with surfgrad, the points made
// on the GPU (no upload), or with source 'stream' the same kind of points (10 clusters in 768-D)
// made here in JavaScript, 16 MiB at a time, and streamed through the package's point-source path
// (the upload measured: timings.upload, of which jsSeconds making the blocks). Posts progress
// (with the wasm memory's size) and the result, with the WebGPU calls per layout iteration
// (gpu_counts.js: dispatches, submits, writes, readbacks).
import { layoutCounter } from './gpu_counts.js';
import * as sg from '../package/surfgrad.js';
import { seeded } from './common.js';

// When this module (and the package it imports) had loaded, in ms since the worker was created
// (its time origin): a new page pays it before its first run can start (issue 35's second load).
const moduleLoadedMs = Math.round(performance.now() * 10) / 10;

// n × 768 points of 10 clusters as Float32Array blocks of about 16 MiB; `made.seconds` is the
// time spent making them (not uploading).
function streamedPoints(n, made) {
  const d = 768, rows = Math.floor((16 << 20) / (d * 4)), r = seeded(5);
  const centres = Float32Array.from({ length: 10 * d }, () => 0.7 * (r() - 0.5));
  const block = new Float32Array(rows * d);
  async function* blocks() {
    for (let r0 = 0; r0 < n; r0 += rows) {
      const t0 = performance.now(), take = Math.min(rows, n - r0);
      for (let i = 0; i < take; i++)
        for (let j = 0, c = ((r0 + i) % 10) * d; j < d; j++) block[i * d + j] = centres[c + j] + r() - 0.5;
      made.seconds += (performance.now() - t0) / 1000;
      yield block.subarray(0, take * d);  // one buffer reused: uploaded before the next is made
    }
  }
  return { n, d, blocks: { [Symbol.asyncIterator]: blocks } };
}

// How surfgrad.wasm's fetch went in this context (its Resource Timing entry; none where another
// context fetched it): bytes over the network (0: from the HTTP cache, 300 or so: a 304) and ms.
function wasmFetch(scope) {
  const e = scope.performance.getEntriesByType('resource').find((r) => r.name.endsWith('/surfgrad.wasm'));
  return e ? { transfer_bytes: e.transferSize, ms: Math.round(e.duration * 10) / 10 } : undefined;
}

// precompile: the page compiles the wasm itself and posts the WebAssembly.Module ({ kind: 'module' }),
// perhaps after the first run's message: init() is handed the promise of it.
let fromPage;
const pageModule = new Promise((resolve, reject) => { fromPage = { resolve, reject }; });
pageModule.catch(() => {});  // (awaited by init() where used)

self.onmessage = async ({ data }) => {
  if (data.kind === 'module') {
    if (data.module) fromPage.resolve(data.module);
    else fromPage.reject(new Error(`the page's compile of the wasm failed: ${data.error}`));
    return;
  }
  const { n, method, options, source, precompile } = data;
  try {
    const i0 = performance.now();
    // (a new page's first run pays it: issue 35's second load)
    const info = await sg.init(precompile ? { wasmModule: pageModule } : {});
    const initSeconds = (performance.now() - i0) / 1000;
    const made = { seconds: 0 };
    const points = source === 'stream' ? streamedPoints(n, made) : sg.builtinPoints(n);
    const callsBefore = sg.stats().webgpuCalls;
    const t0 = performance.now(), counter = layoutCounter();
    // Each phase's first and last progress event, in ms since the map was called ('pca', 'knn',
    // ... report at their start): where the map's time outside its phases' own timings goes.
    const phaseEvents = {};
    const r = await sg[method](points, {
      ...options,
      onProgress: ({ phase, done, total }) => {
        const t = Math.round((performance.now() - t0) * 10) / 10;
        (phaseEvents[phase] ??= [t, t])[1] = t;
        counter.progress({ phase, done });
        self.postMessage({ kind: 'progress', phase, done, total, wasmMemoryBytes: sg.stats().wasmMemoryBytes });
      },
    });
    const workerSeconds = (performance.now() - t0) / 1000;
    // The WebGPU calls this run made that a warm run may make fewer of (buffers the pool holds,
    // error scopes awaited, pipelines): what a new page's run pays besides compiling.
    const callsAfter = sg.stats().webgpuCalls, runCalls = {};
    for (const name of ['wgpuDeviceCreateBuffer', 'wgpuDevicePopErrorScope', 'wgpuDeviceCreateComputePipelineAsync',
                        'wgpuDeviceCreateComputePipeline', 'wgpuDeviceCreateShaderModule', 'wgpuDeviceCreateBindGroup',
                        'wgpuQueueSubmit', 'wgpuBufferMapAsync', 'wgpuQueueWriteBuffer'])
      runCalls[name.replace(/^wgpu/, '')] = (callsAfter[name] || 0) - (callsBefore[name] || 0);
    self.postMessage({ kind: 'result', adapter: info.adapter, embedding: r.embedding, timings: r.timings, workerSeconds,
                       jsSeconds: source === 'stream' ? made.seconds : undefined,
                       wasmMemoryBytes: r.wasmMemoryBytes, gpuPeakBytes: r.gpuPeakBytes, k: r.k,
                       pcaComponents: r.pcaComponents, approximateKnn: r.approximateKnn,
                       gpuCallsPerIteration: counter.perIteration(), pipelines: sg.stats().pipelines,
                       initSeconds, initMs: info.initMs, moduleLoadedMs, runCalls, wasmFetch: wasmFetch(self),
                       phaseEventsMs: phaseEvents },
                      [r.embedding.buffer]);
  } catch (e) {
    self.postMessage({ kind: 'error', error: `${e.kind || ''} ${e.message || e}` });
  }
};
