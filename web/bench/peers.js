// The browser peers benchmark's page script: what a web developer would use instead of surfgrad
// to map embeddings in the page (umap-js, tsne-js, embedding-atlas's UMAP), each timed in the page
// with performance.now() on MNIST from /data/mnist10k, with the page's responsiveness during the
// run (the longest gap between requestAnimationFrame callbacks, and the long tasks the browser
// reports). Bundled by browser_peers.mjs with esbuild into dist/peers.js; the driver calls
// window.peers.run(...) once per fresh page. Opening peers.html by hand runs nothing by itself.
//
// surfgrad itself is optional here: with ?surfgrad=1 in the page's URL and /package/surfgrad.js
// served (the WebAssembly package, web/package/), the tools 'surfgrad-umap' and 'surfgrad-tsne'
// run through it. Without either, they report {skipped: reason}.
import { UMAP } from 'umap-js';
// tsne-js's main (dist/) needs node's 'events'; the package ships a browserify build for pages.
import TSNE from 'tsne-js/build/tsne.min.js';
// embedding-atlas ships its UMAP as dist/umap.js (not in the package's exports map, so by path);
// that chunk carries the Rust umap-wasm module inline and imports nothing else.
import { createUMAP } from '../node_modules/embedding-atlas/dist/umap.js';
import { seeded, rowsOf, flatten } from './common.js';

const params = new URLSearchParams(location.search);

async function gunzipFetch(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  const stream = res.body.pipeThrough(new DecompressionStream('gzip'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

// IDX: big-endian uint32 magic (0x0803 images, 0x0801 labels), one uint32 per dimension, uint8 data.
function parseIdx(bytes, magic) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0) !== magic) throw new Error(`IDX magic ${view.getUint32(0)}, expected ${magic}`);
  const ndim = magic & 0xff;
  const dims = [];
  for (let i = 0; i < ndim; i++) dims.push(view.getUint32(4 + 4 * i));
  return { dims, data: bytes.subarray(4 + 4 * ndim) };
}

let mnist = null;
async function loadMnist() {
  if (mnist) return mnist;
  const t0 = performance.now();
  const images = parseIdx(await gunzipFetch('/data/mnist10k/t10k-images-idx3-ubyte.gz'), 0x803);
  const labels = parseIdx(await gunzipFetch('/data/mnist10k/t10k-labels-idx1-ubyte.gz'), 0x801);
  const [n, h, w] = images.dims;
  const d = h * w;
  const points = new Float32Array(n * d);
  for (let i = 0; i < n * d; i++) points[i] = images.data[i] / 255;
  mnist = { n, d, points, labels: labels.data, loadSeconds: (performance.now() - t0) / 1000 };
  return mnist;
}

// Watches the page while a run works: requestAnimationFrame gaps and long tasks (> 50 ms).
function watch() {
  let last = performance.now(), maxGap = 0, frames = 0, on = true;
  const tick = (t) => {
    if (t - last > maxGap) maxGap = t - last;
    last = t;
    frames++;
    if (on) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  const longTasks = [];
  let observer = null;
  try {
    observer = new PerformanceObserver((list) => { for (const e of list.getEntries()) longTasks.push(e.duration); });
    observer.observe({ type: 'longtask', buffered: false });
  } catch { observer = null; }
  return async () => {
    // one more frame after the run ends closes the gap that the run's last long task opened
    await new Promise((done) => requestAnimationFrame(done));
    await new Promise((done) => setTimeout(done, 0));
    on = false;
    const tail = performance.now() - last;
    if (tail > maxGap) maxGap = tail;
    if (observer) { for (const e of observer.takeRecords()) longTasks.push(e.duration); observer.disconnect(); }
    return {
      maxFrameGapMs: Math.round(maxGap),
      frames,
      longTasks: observer ? longTasks.length : null,
      longTaskMs: Math.round(longTasks.reduce((a, b) => a + b, 0)),
      longestTaskMs: Math.round(longTasks.reduce((a, b) => Math.max(a, b), 0)),
    };
  };
}

const yieldToPage = () => new Promise((done) => setTimeout(done, 0));

let surfgradModule = null;
async function surfgrad() {
  if (params.get('surfgrad') !== '1') return { skipped: 'page opened without ?surfgrad=1' };
  if (!surfgradModule) {
    const url = '/package/surfgrad.js';
    const head = await fetch(url, { method: 'HEAD' });
    if (!head.ok) return { skipped: `${url} not served (HTTP ${head.status}): build the package first` };
    const mod = await import(/* a runtime URL, left out of the bundle */ url);
    const sg = mod.default && mod.default.umap ? mod.default : mod;
    const t0 = performance.now();
    const info = await sg.init();
    surfgradModule = { sg, info, initSeconds: (performance.now() - t0) / 1000 };
  }
  return surfgradModule;
}

// Each tool: (points, n, d, opts) -> { embedding: Float32Array n*2, detail }
const tools = {
  // The plain synchronous fit: the whole computation is one task on the main thread.
  async 'umap-js'(points, n, d, o) {
    const rows = rowsOf(points, n, d);
    const t0 = performance.now();
    const umap = new UMAP({ nNeighbors: 15, minDist: 0.1, nComponents: 2, random: seeded(o.seed) });
    const out = umap.fit(rows);
    return { t0, embedding: flatten(out), detail: { epochs: umap.getNEpochs ? umap.getNEpochs() : undefined } };
  },
  // The way a page that must stay responsive uses it: initializeFit (kNN, fuzzy graph, spectral
  // init: one synchronous call), then step() in slices of ~10 ms, yielding to the event loop
  // between slices so frames and input get through.
  async 'umap-js-steps'(points, n, d, o) {
    const rows = rowsOf(points, n, d);
    const t0 = performance.now();
    const umap = new UMAP({ nNeighbors: 15, minDist: 0.1, nComponents: 2, random: seeded(o.seed) });
    const epochs = umap.initializeFit(rows);
    const tInit = performance.now();
    await yieldToPage();
    let epoch = 0, slices = 0;
    while (epoch < epochs) {
      const start = performance.now();
      while (epoch < epochs && performance.now() - start < 10) { umap.step(); epoch++; }
      slices++;
      await yieldToPage();
    }
    return { t0, embedding: flatten(umap.getEmbedding()),
             detail: { epochs, initializeFitSeconds: (tInit - t0) / 1000, slices } };
  },
  // embedding-atlas's UMAP (Rust umap-wasm): createUMAP builds the kNN graph (NN-descent) and
  // the spectral init, run() anneals the layout; on the CPU by default, WebGPU with gpu: true.
  async 'embedding-atlas'(points, n, d, o) { return atlas(points, n, d, o, false); },
  async 'embedding-atlas-gpu'(points, n, d, o) { return atlas(points, n, d, o, true); },
  // tsne-js: exact t-SNE (O(n^2) memory and time), synchronous run(). Its init draws from
  // Math.random, which is seeded for the run so that it repeats.
  async 'tsne-js'(points, n, d, o) {
    const rows = rowsOf(points, n, d);
    const random = Math.random;
    Math.random = seeded(o.seed);
    try {
      const t0 = performance.now();
      const model = new TSNE({ dim: 2, perplexity: 30, metric: 'euclidean' });
      model.init({ data: rows, type: 'dense' });
      const [error, iter] = model.run();
      const out = model.getOutput();
      return { t0, embedding: flatten(out), detail: { klError: error, iterations: iter,
               learningRate: model.learningRate, earlyExaggeration: model.earlyExaggeration, nIter: model.nIter } };
    } finally { Math.random = random; }
  },
  async 'surfgrad-umap'(points, n, d, o) {
    const s = await surfgrad();
    if (s.skipped) return s;
    const t0 = performance.now();
    const r = await s.sg.umap(points.subarray(0, n * d), d, { nNeighbors: 15, minDist: 0.1, seed: o.seed });
    return { t0, embedding: r.embedding, detail: { adapter: s.info, initSeconds: s.initSeconds } };
  },
  async 'surfgrad-tsne'(points, n, d, o) {
    const s = await surfgrad();
    if (s.skipped) return s;
    const t0 = performance.now();
    const r = await s.sg.tsne(points.subarray(0, n * d), d, { perplexity: 30, seed: o.seed });
    return { t0, embedding: r.embedding, detail: { adapter: s.info, initSeconds: s.initSeconds } };
  },
};

// The same peers in a Web Worker (peers-worker.js): the time includes starting the worker and
// moving the points there and the map back.
function inWorker(job) {
  return async (points, n, d, o) => {
    const t0 = performance.now();
    const worker = new Worker(new URL('./peers-worker.js', import.meta.url), { type: 'module' });
    const data = points.slice(0, n * d);
    const r = await new Promise((done, fail) => {
      worker.onmessage = (e) => done(e.data);
      worker.onerror = (e) => fail(new Error(`worker: ${e.message}`));
      worker.postMessage({ tool: job, points: data, n, d, seed: o.seed }, [data.buffer]);
    });
    worker.terminate();
    if (r.error) throw new Error(r.error);
    return { t0, embedding: r.embedding, detail: r.detail };
  };
}
tools['umap-js-worker'] = inWorker('umap-js');
tools['embedding-atlas-worker'] = inWorker('embedding-atlas');

async function atlas(points, n, d, o, gpu) {
  const data = points.slice(0, n * d);
  const t0 = performance.now();
  const umap = await createUMAP(n, d, 2, data, { metric: 'euclidean', nNeighbors: 15, minDist: 0.1, seed: o.seed, gpu });
  const tGraph = performance.now();
  await umap.run();
  const embedding = new Float32Array(umap.embedding);
  const epochs = umap.epoch;
  umap.destroy();
  return { t0, embedding, detail: { epochs, createSeconds: (tGraph - t0) / 1000, gpu } };
}

async function adapterInfo() {
  if (!navigator.gpu) return { error: 'navigator.gpu is missing' };
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) return { error: 'requestAdapter() returned null' };
  const i = adapter.info || {};
  return { vendor: i.vendor, architecture: i.architecture, device: i.device, description: i.description,
           features: [...adapter.features].sort(), maxBufferSize: adapter.limits.maxBufferSize,
           maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize };
}

// One run: the first n MNIST points through one tool. The embedding comes back as a plain array.
async function run(tool, n, { seed = 0 } = {}) {
  if (!tools[tool]) throw new Error(`unknown tool ${tool}; one of ${Object.keys(tools).join(', ')}`);
  const m = await loadMnist();
  if (n > m.n) throw new Error(`n ${n} > ${m.n}`);
  await yieldToPage();
  const stop = watch();
  const t = performance.now();
  const r = await tools[tool](m.points, n, m.d, { seed });
  const end = performance.now();
  const page = await stop();
  if (r.skipped) return { tool, n, skipped: r.skipped };
  return { tool, n, seconds: (end - r.t0) / 1000, secondsWithSetup: (end - t) / 1000, page,
           detail: r.detail, embedding: Array.from(r.embedding) };
}

window.peers = { run, loadMnist: async () => { const m = await loadMnist(); return { n: m.n, d: m.d, loadSeconds: m.loadSeconds }; },
                 adapterInfo, tools: Object.keys(tools) };
document.getElementById('status').textContent = 'ready: window.peers.run(tool, n)';
