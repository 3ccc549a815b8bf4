// The map page's worker: the surfgrad package runs here so the page stays responsive while it maps.
// Loaded as a module worker: `new Worker('map_worker.js[?mock=1]', { type: 'module' })`.
//
// Messages in:  { type: 'parse', id, bytes: ArrayBuffer, name }       .npy → { data, shape, dtype }
//               { type: 'run', points: Float32Array, d, method: 'tsne'|'umap', options }
//               { type: 'cancel' }
// Messages out: { type: 'ready', info: DeviceInfo, mock, schema: MapOptionSpec[] | null }
//               { type: 'parsed', id, data, shape, dtype }             (data transferred)
//               { type: 'progress', phase, done, total, embedding? }  (embedding: a transferred copy)
//               { type: 'result', embedding, n, timings, approximateKnn, knnRecall }
//               { type: 'cancelled', message }
//               { type: 'error', id?, stage, kind, name, message }
const mock = new URL(self.location.href).searchParams.get('mock') === '1';
const packageUrl = mock ? './dev_mock_surfgrad.js' : '../package/surfgrad.js';

let sg = null;
// A Float32Array that owns its whole ArrayBuffer, so it can be transferred without detaching
// anything the library still uses (wasm memory, a larger pooled buffer).
const owned = (a) => (a instanceof Float32Array && a.byteOffset === 0 && a.buffer instanceof ArrayBuffer
  && a.buffer.byteLength === a.byteLength ? a : new Float32Array(a));
let cancelRequested = false;
let controller = null;

function postError(stage, e, id) {
  self.postMessage({
    type: 'error', id, stage,
    kind: e?.kind ?? (e?.name === 'AbortError' ? 'cancelled' : 'internal'),
    name: e?.name ?? 'Error',
    message: e?.message ?? String(e),
  });
}

const ready = (async () => {
  try {
    sg = await import(packageUrl);
  } catch (e) {
    postError('load', { kind: 'io', name: 'Error', message: `could not load the surfgrad package (${packageUrl}): ${e?.message ?? e}` });
    return false;
  }
  try {
    const info = await sg.init();
    // The map options' schema: the page's option fields and their checks (the mock has none).
    const schema = typeof sg.mapOptionSchema === 'function' ? sg.mapOptionSchema() : null;
    self.postMessage({ type: 'ready', info, mock, schema });
    return true;
  } catch (e) {
    postError('init', e);
    return false;
  }
})();

async function run({ points, d, method, options }) {
  cancelRequested = false;
  controller = new AbortController();
  const fn = method === 'umap' ? sg.umap : sg.tsne;
  const opts = {
    ...options,
    signal: controller.signal,
    onProgress: (p) => {
      const msg = { type: 'progress', phase: p.phase, done: p.done, total: p.total };
      const transfer = [];
      if (p.embedding) {
        // A copy: the library may keep writing into the array it handed us.
        msg.embedding = new Float32Array(p.embedding);
        transfer.push(msg.embedding.buffer);
      }
      self.postMessage(msg, transfer);
      return cancelRequested;
    },
  };
  try {
    const r = await fn(points, d, opts);
    const embedding = owned(r.embedding);
    self.postMessage({
      type: 'result', embedding, n: r.n, timings: r.timings,
      approximateKnn: r.approximateKnn, knnRecall: r.knnRecall,
    }, [embedding.buffer]);
  } catch (e) {
    if (e?.kind === 'cancelled' || (cancelRequested && e?.name === 'AbortError')) {
      self.postMessage({ type: 'cancelled', message: e.message });
    } else {
      postError('run', e);
    }
  } finally {
    controller = null;
  }
}

self.onmessage = async (ev) => {
  const m = ev.data;
  if (m.type === 'cancel') {
    cancelRequested = true;
    controller?.abort();
    return;
  }
  if (!(await ready)) {
    postError(m.type, new Error('the surfgrad package did not load; see the first error'), m.id);
    return;
  }
  if (m.type === 'parse') {
    try {
      const { data: raw, shape, dtype } = sg.readNpy(m.bytes);
      const data = owned(raw);
      self.postMessage({ type: 'parsed', id: m.id, data, shape, dtype }, [data.buffer]);
    } catch (e) {
      postError('parse', { kind: e?.kind, name: e?.name, message: `${m.name}: ${e?.message ?? e}` }, m.id);
    }
  } else if (m.type === 'run') {
    await run(m);
  }
};
