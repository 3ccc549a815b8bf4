// The map page's worker: the surfgrad package runs here so the page stays responsive while it maps.
// Loaded as a module worker: `new Worker('map_worker.js[?mock=1][&decoders=N]', { type: 'module' })`.
//
// Messages in:  { type: 'parse', id, bytes: ArrayBuffer, name }       .npy → { data, shape, dtype }
//               { type: 'open-table', id, blob?: Blob | url?: string, name, column?: string[],
//                 labelColumn?: string ('' none), maxBytes? }    a Parquet / Arrow file → 'table'
//               { type: 'open-builtin', id, n }   the CLI's built-in clusters (n × 768, made on the GPU) → 'table'
//               { type: 'row', id, i }                              the table's label text of row i
//               { type: 'run', points: Float32Array, d, method: 'tsne'|'umap', options }
//               { type: 'run', table: true, method, options }      the open table's points
//               { type: 'save-parquet', id, embedding: Float32Array } → 'saved' { bytes }
//               { type: 'cancel' }
// Messages out: { type: 'ready', info: DeviceInfo, mock, schema: MapOptionSpec[] | null }
//               { type: 'parsed', id, data, shape, dtype }             (data transferred)
//               { type: 'table', id, info: { name, format, n, d, bytes, cols, column, labelColumn },
//                 labels: { codes: Int32Array, names, counts } | null }  (npy: { format: 'npy' })
//               { type: 'progress', phase, done, total, xy? }  (xy: { x, y } scaled for the plot, transferred)
//               { type: 'result', embedding, xy, n, timings, approximateKnn, knnRecall, pipelines }
//               { type: 'cancelled', message }
//               { type: 'error', id?, stage, kind, name, message }
// A table's points stay in its Blob (the browser keeps a File or a fetched body on disk) and go to
// the map as row blocks (tables.js); the O(n) scaling of each layout for the plot happens here, so
// the page's thread only hands the arrays to WebGL.
const mock = new URL(self.location.href).searchParams.get('mock') === '1';
// Parquet decoder workers (tables.js pointBlocks): ?decoders=N, else its default by the host's cores.
const decoders = Number(new URL(self.location.href).searchParams.get('decoders')) || undefined;
// ?prewarm=0: the map's kernels are not compiled ahead of their first use (comparisons; the
// package's init({prewarm}): by default they compile on the GPU process's workers while the
// points load).
const prewarm = new URL(self.location.href).searchParams.get('prewarm') !== '0';
const packageUrl = mock ? './dev_mock_surfgrad.js' : '../package/surfgrad.js';

let sg = null;
// A Float32Array that owns its whole ArrayBuffer, so it can be transferred without detaching
// anything the library still uses (wasm memory, a larger pooled buffer).
const owned = (a) => (a instanceof Float32Array && a.byteOffset === 0 && a.buffer instanceof ArrayBuffer
  && a.buffer.byteLength === a.byteLength ? a : new Float32Array(a));
let cancelRequested = false;
let tables = null; // dist/tables.js, loaded on the first table
// The points the worker holds (a table, a streamed .npy or the built-in clusters):
// { kind: 'table' | 'npy' | 'builtin', blob, name, n, d, table, columns, labelColumn, labels }
let current = null;
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
    const info = await sg.init({ prewarm });
    // The map options' schema: the page's option fields and their checks (the mock has none).
    const schema = typeof sg.mapOptionSchema === 'function' ? sg.mapOptionSchema() : null;
    self.postMessage({ type: 'ready', info, mock, schema });
    return true;
  } catch (e) {
    postError('init', e);
    return false;
  }
})();

// Embedding (n×2 interleaved) → x, y in [-0.92, 0.92], centred, aspect ratio kept (the plot's
// normalised device coordinates).
// `stride` > 1: only every stride-th point (an intermediate layout of a large map, below).
function scaleForPlot(embedding, n, stride = 1) {
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (let i = 0; i < n; i += stride) {
    const x = embedding[2 * i], y = embedding[2 * i + 1];
    if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
    if (x < x0) x0 = x; if (x > x1) x1 = x; if (y < y0) y0 = y; if (y > y1) y1 = y;
  }
  const cx = (x0 + x1) / 2 || 0, cy = (y0 + y1) / 2 || 0;
  const s = 1.84 / (Math.max(x1 - x0, y1 - y0) || 1);
  const m = Math.ceil(n / stride);
  const x = new Float32Array(m), y = new Float32Array(m);
  for (let k = 0, i = 0; k < m; k++, i += stride) { x[k] = (embedding[2 * i] - cx) * s; y[k] = (embedding[2 * i + 1] - cy) * s; }
  return { x, y, stride };
}

// The most points of an intermediate layout the page draws: regl-scatterplot takes a new set of
// points on the page's thread (~0.8 s for 1M on a 2-core host, ~0.1 s for 100k), so a larger map
// is drawn live from an even sample of its points (every stride-th) and whole when it is done.
const LIVE_POINTS = 100000;

// The package takes a PointSource ({ n, d, blocks }) where it has sg.npyPoints (the streaming
// API); an older one takes one Float32Array, gathered here from the blocks.
const streaming = () => typeof sg.npyPoints === 'function';
async function pointsForPackage(source) {
  if (streaming()) return [source];
  const points = new Float32Array(source.n * source.d);
  let o = 0;
  for await (const b of source.blocks) { points.set(b, o); o += b.length; }
  return [points, source.d];
}
// The most point bytes (n × d × 4) a tab is given: in blocks, the GPU's share; gathered into one
// array, that array and the library's copy in a 4 GiB wasm32 heap.
const maxPointBytes = () => (streaming() ? 8 * 2 ** 30 : 2 ** 30);
const MAX_PLOT_POINTS = 20e6;
const gib = (b) => (b >= 2 ** 30 ? `${(b / 2 ** 30).toFixed(1)} GiB` : b >= 2 ** 20 ? `${Math.round(b / 2 ** 20)} MiB` : `${Math.round(b / 1024)} KiB`);

async function openTable(m) {
  tables ??= await import('./dist/tables.js');
  let blob = m.blob, name = m.name;
  if (m.url) {
    let res;
    try { res = await fetch(m.url); } catch (e) { throw { kind: 'io', name: 'FetchError', message: `${m.url}: ${e.message}` }; }
    if (!res.ok) throw { kind: 'io', name: 'FetchError', message: `${m.url}: HTTP ${res.status} ${res.statusText}` };
    blob = await res.blob();
  }
  if (!blob) { if (!current) throw { kind: 'value', message: 'no table is open' }; blob = current.blob; name = current.name; }
  const table = await tables.openTable(blob, name);
  if (table.format === 'npy') {
    // With the streaming package, an .npy stays in its Blob too (npyPoints reads it in blocks).
    if (!streaming()) return { format: 'npy', blob };
    const src = await sg.npyPoints(blob);
    if (src.shape.length !== 2)
      throw { kind: 'shape', name: 'DataError', message: `${name}: expected an n × d array of points, got shape (${src.shape.join(', ')})` };
    checkSize(name, src.n, src.d, m.maxBytes);
    current = { kind: 'npy', blob, name, n: src.n, d: src.d, labels: null };
    return { info: { name, format: `.npy ${src.dtype}`, n: src.n, d: src.d, bytes: src.n * src.d * 4, cols: null, column: null, labelColumn: null }, labels: null };
  }
  const columns = tables.choosePointColumns(table.cols, m.column, name);
  const d = await tables.pointDims(table, columns, name);
  const bytes = checkSize(name, table.n, d, m.maxBytes);
  let labelColumn = null, labels = null;
  try {
    labelColumn = tables.chooseLabelColumn(table.cols, m.labelColumn, name);
    if (labelColumn) labels = await tables.readLabels(table, labelColumn, name);
  } catch (e) {
    if (m.labelColumn) throw e;
    labelColumn = null; // a label column found by name only: without it, not an error
  }
  current = { kind: 'table', blob, name, n: table.n, table, columns, d, labelColumn, labels };
  return {
    info: { name, format: table.format, n: table.n, d, bytes, cols: table.cols, column: columns, labelColumn },
    labels: labels && { codes: labels.codes, names: labels.names, counts: labels.counts },
  };
}

// A final layout of this many points or more is drawn with its hover index (regl-scatterplot's
// k-d tree) built here, sent after the result with the layout (transferred): the page's thread then
// skips regl-scatterplot's own copy of the points to its index worker (~0.5 s at 1M on a 2-core host).
const INDEX_POINTS = 200000;
let spatialIndex = null;
async function postIndex(xy) {
  const t0 = performance.now();
  let index = null;
  try {
    spatialIndex ??= (await import('./dist/spatial_index.js')).createSpatialIndex;
    index = await spatialIndex({ x: xy.x, y: xy.y }, false);
  } catch (e) {
    console.warn(`[map worker] no hover index built here (${e?.message ?? e}); the page builds it`);
  }
  self.postMessage({ type: 'index', xy, index, seconds: (performance.now() - t0) / 1000 },
    index ? [xy.x.buffer, xy.y.buffer, index] : [xy.x.buffer, xy.y.buffer]);
}

// Refuses n × d float32 points that the tab cannot map (estimated before any is read).
function checkSize(name, n, d, maxBytes) {
  const bytes = n * d * 4, limit = maxBytes ?? maxPointBytes();
  if (n > MAX_PLOT_POINTS || bytes > limit)
    throw { kind: 'memory', name: 'DataError', message: `${name}: ${n.toLocaleString('en-US')} rows × ${d} = ${gib(bytes)} of float32 points is more than this tab can map `
      + `(at most ${gib(limit)} and ${MAX_PLOT_POINTS.toLocaleString('en-US')} points${streaming() ? '' : ' with a package that takes the points whole'}); `
      + 'map it natively (surfgrad map FILE) or a sample of its rows' };
  return bytes;
}

// The built-in clusters of `surfgrad map` with no input (10 clusters, label i mod 10).
function openBuiltin(n) {
  if (typeof sg.builtinPoints !== 'function') throw { kind: 'value', message: 'this surfgrad package has no builtinPoints()' };
  const src = sg.builtinPoints(n);
  checkSize('built-in clusters', src.n, src.d);
  const values = Array.from(src.labels);
  current = { kind: 'builtin', name: 'built-in clusters', n: src.n, d: src.d, labelColumn: 'label', labels: { values } };
  const names = [...new Set(values)].sort((a, b) => a - b);
  const counts = names.map(() => 0);
  for (const v of values) counts[v]++;
  return { info: { name: 'built-in clusters', format: 'made on the GPU', n: src.n, d: src.d, bytes: 0, cols: null, column: null, labelColumn: 'label' },
    labels: { codes: Int32Array.from(src.labels), names: names.map(String), counts } };
}

// A fresh PointSource of the held points for one run (a source's blocks are read once).
async function heldSource() {
  if (current.kind === 'builtin') return sg.builtinPoints(current.n);
  if (current.kind === 'npy') return sg.npyPoints(current.blob);
  return { n: current.n, d: current.d, blocks: tables.pointBlocks(current.table, current.columns, current.d, current.name, undefined, { decoders }) };
}

async function run({ points, d, method, options, table, livePoints = LIVE_POINTS }) {
  cancelRequested = false;
  if (!table) current = null; // the page moved on to other points: the table's labels are not theirs
  controller = new AbortController();
  const fn = method === 'umap' ? sg.umap : sg.tsne;
  const opts = {
    ...options,
    signal: controller.signal,
    onProgress: (p) => {
      // (wasmMemoryBytes: the page reports the tab's memory with it; the mock has no stats)
      const msg = { type: 'progress', phase: p.phase, done: p.done, total: p.total, wasmMemoryBytes: sg.stats?.().wasmMemoryBytes };
      const transfer = [];
      if (p.embedding?.length) {
        // Scaled into new arrays: the library may keep writing into the one it handed us.
        const n = p.embedding.length / 2;
        msg.xy = scaleForPlot(p.embedding, n, Math.max(1, Math.ceil(n / livePoints)));
        transfer.push(msg.xy.x.buffer, msg.xy.y.buffer);
      }
      self.postMessage(msg, transfer);
      return cancelRequested;
    },
  };
  try {
    const args = table ? await pointsForPackage(await heldSource()) : [points, d];
    const r = await fn(...args, opts);
    const embedding = owned(r.embedding);
    const xy = scaleForPlot(embedding, r.n);
    const withIndex = r.n >= INDEX_POINTS;
    self.postMessage({
      type: 'result', embedding, xy, n: r.n, timings: r.timings,
      approximateKnn: r.approximateKnn, knnRecall: r.knnRecall, indexFollows: withIndex,
      pipelines: sg.stats?.().pipelines,  // built so far, prewarmed, built at first use (benchmarks)
    }, withIndex ? [embedding.buffer] : [embedding.buffer, xy.x.buffer, xy.y.buffer]);
    if (withIndex) await postIndex(xy);
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
  } else if (m.type === 'open-table') {
    try {
      const r = await openTable(m);
      self.postMessage({ type: 'table', id: m.id, ...r }, r.labels ? [r.labels.codes.buffer] : []);
    } catch (e) {
      postError('table', e, m.id);
    }
  } else if (m.type === 'open-builtin') {
    try {
      const r = openBuiltin(m.n);
      self.postMessage({ type: 'table', id: m.id, ...r }, [r.labels.codes.buffer]);
    } catch (e) {
      postError('table', e, m.id);
    }
  } else if (m.type === 'row') {
    const v = current?.labels?.values[m.i];
    self.postMessage({ type: 'row', id: m.id, i: m.i, text: v == null ? null : String(v) });
  } else if (m.type === 'save-parquet') {
    try {
      tables ??= await import('./dist/tables.js');
      const n = m.embedding.length / 2;
      const label = m.labels ? { name: 'label', values: Array.from(m.labels) }
        : current?.labels && current.n === n ? { name: current.labelColumn, values: current.labels.values } : null;
      const bytes = await tables.mapToParquet(m.embedding, n, label);
      self.postMessage({ type: 'saved', id: m.id, bytes }, [bytes.buffer]);
    } catch (e) {
      postError('save', e, m.id);
    }
  } else if (m.type === 'run') {
    await run(m);
  }
};
