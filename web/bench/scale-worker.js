// The scale benchmark's worker (scale.html): maps builtinPoints(n) with surfgrad, the points made
// on the GPU (no upload), and posts progress (with the wasm memory's size) and the result.
import * as sg from '../package/surfgrad.js';

self.onmessage = async ({ data: { n, method, options } }) => {
  try {
    const info = await sg.init();
    const t0 = performance.now();
    const r = await sg[method](sg.builtinPoints(n), {
      ...options,
      onProgress: ({ phase, done, total }) => {
        self.postMessage({ kind: 'progress', phase, done, total, wasmMemoryBytes: sg.stats().wasmMemoryBytes });
      },
    });
    const workerSeconds = (performance.now() - t0) / 1000;
    self.postMessage({ kind: 'result', adapter: info.adapter, embedding: r.embedding, timings: r.timings, workerSeconds,
                       wasmMemoryBytes: r.wasmMemoryBytes, gpuPeakBytes: r.gpuPeakBytes, k: r.k,
                       pcaComponents: r.pcaComponents, approximateKnn: r.approximateKnn }, [r.embedding.buffer]);
  } catch (e) {
    self.postMessage({ kind: 'error', error: `${e.kind || ''} ${e.message || e}` });
  }
};
