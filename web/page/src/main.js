// The map page: load a data set, run t-SNE or UMAP in a worker (surfgrad on the browser's WebGPU),
// draw the layout live with WebGL. URL parameters (for links and tests):
//   data=mnist10k | data=<url of .npy, Parquet or Arrow IPC> | data=builtin&n=N (the CLI's built-in clusters,
//   N × 768, made on the GPU)   labels=<url of .npy>   n=<use the first n points (.npy read whole)>
//   column=<points column(s), a,b,c> label=<label column, '' none> (tables: as surfgrad map --column)
//   maxBytes=<the most point bytes to map: a tab's limit, for tests>
//   livePoints=<the most points of an intermediate layout drawn: an even sample of larger maps; 100000>
//   method=tsne|umap   and any map option by its JavaScript name (perplexity= earlyExaggeration=
//   nNeighbors= minDist= epochs= seed= ...: the library's schema, mapOptionSchema())
//   run=1 (start once loaded)   mock=1 (the dev mock instead of ../package/surfgrad.js)
//   tiles=<url of a tiled map's folder or manifest.json> (surfgrad map … --tiles DIR; tiles.js)
//   budget=<the most points of a tiled map drawn at once; 2000000>  tileDensity=<points per px² on screen from
//   which a tile's children are not fetched; 1/24>
import { loadMnist } from './idx.js';
import { MapView } from './plot.js';
import { TiledMap } from './tiles.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const mock = params.get('mock') === '1';

// State that tests read: window.surfgradPage.state is 'starting' | 'idle' | 'loading' | 'running'
// | 'done' | 'cancelled' | 'error'.
const page = {
  state: 'starting', info: null, data: null, result: null, error: null, draws: 0,
  colours: () => view.colours(),
  plotRect: () => { const r = $('plot').getBoundingClientRect(); return { x: r.x, y: r.y, width: r.width, height: r.height }; },
};
window.surfgradPage = page;
page.view = null; // set below; for tests and the console
const setState = (s) => { page.state = s; document.body.dataset.state = s; };

// Without WebGL (a browser or GPU process that gives none) the plot cannot be made: the page says
// so and stops in state 'error' (it stayed at 'starting' with an uncaught TypeError, and a
// benchmark run waiting for it waited out its whole budget).
const view = (() => {
  try {
    return new MapView($('plot'), { tooltip: $('tooltip'), legend: $('legend') });
  } catch (e) {
    const webgl = !!document.createElement('canvas').getContext('webgl');
    showError({ name: 'WebGLError', kind: 'device', message: `the plot could not be made (${e?.message ?? e})${webgl ? '' : ': this browser gives no WebGL context; '
      + 'enable WebGL (hardware acceleration, or --use-angle=swiftshader --enable-unsafe-swiftshader in headless Chromium)'}` }, 'The plot');
    setState('error');
    throw e;
  }
})();
page.view = view;

// ---- errors -------------------------------------------------------------------------------------

function showError(e, context) {
  const kind = e?.kind ? ` (${e.kind})` : '';
  const name = e?.name && e.name !== 'Error' ? e.name : 'Error';
  $('error-title').textContent = `${context}: ${name}${kind}`;
  $('error-message').textContent = e?.message ?? String(e);
  $('error').hidden = false;
  page.error = { context, kind: e?.kind, name: e?.name, message: e?.message ?? String(e) };
  console.error(`[map page] ${context}: ${name}${kind}: ${e?.message ?? e}`);
}
const clearError = () => { $('error').hidden = true; page.error = null; };
$('error-close').onclick = clearError;
window.addEventListener('unhandledrejection', (e) => showError(e.reason, 'Unexpected error'));

// ---- the worker ---------------------------------------------------------------------------------

let worker = null;
let ready = null;
const parses = new Map(); // id → { resolve, reject }: parse, open-table, row and save-parquet replies
let nextId = 1;
let run = null; // { start, timer, method, n, resolve }

function startWorker() {
  // (?decoders=N: the Parquet decoder workers, tables.js; tests force the parallel path on 2 cores.
  // ?prewarm=0: no kernels compiled ahead, for comparisons: map_worker.js)
  const passed = ['decoders', 'prewarm'].filter((k) => params.has(k)).map((k) => [k, params.get(k)]);
  const workerArgs = new URLSearchParams([...(mock ? [['mock', '1']] : []), ...passed]);
  worker = new Worker(`map_worker.js${workerArgs.size ? `?${workerArgs}` : ''}`, { type: 'module' });
  ready = new Promise((resolve) => {
    worker.onmessage = (ev) => onWorkerMessage(ev.data, resolve);
    worker.onerror = (ev) => {
      ev.preventDefault?.();
      showError({ name: 'WorkerError', message: ev.message || 'the map worker failed to start (see the console)' }, 'Worker');
      resolve(false);
      if (run) endRun('error');
    };
  });
  return ready;
}

function onWorkerMessage(m, resolveReady) {
  switch (m.type) {
    case 'ready': {
      page.info = m.info;
      page.schema = m.schema ?? null;
      buildMoreOptions();
      const i = m.info;
      $('device').textContent = `${i.adapter || 'unknown adapter'} · ${i.backend || '?'}${i.implementation ? ` · ${i.implementation}` : ''}`;
      $('device').title = `vendor: ${i.vendor}\narchitecture: ${i.architecture}\nfeatures: ${(i.features || []).join(', ')}`;
      $('device').classList.toggle('mock', !!m.mock);
      resolveReady(true);
      break;
    }
    case 'parsed': case 'table': case 'row': case 'saved': parses.get(m.id)?.resolve(m); parses.delete(m.id); break;
    case 'progress': onProgress(m); break;
    case 'result': onResult(m); break;
    case 'index': onIndex(m); break;
    case 'cancelled': endRun('cancelled'); setStatus('Cancelled', m.message); break;
    case 'error': {
      if (m.stage === 'load' || m.stage === 'init') {
        $('device').textContent = 'no device';
        showError(m, m.stage === 'load' ? 'Loading surfgrad' : 'surfgrad.init()');
        resolveReady(false);
        setState('error');
      } else if (m.id && parses.has(m.id)) {
        parses.get(m.id).reject(m); parses.delete(m.id);
      } else {
        showError(m, 'Map');
        if (run) setStatus('Failed', `${m.kind ?? 'error'} after ${fmtSeconds((performance.now() - run.start) / 1000)}`);
        endRun('error');
      }
      break;
    }
  }
}

// A request to the worker answered by one message with its id.
async function ask(msg, transfer = []) {
  if (!(await ready)) throw { kind: 'device', message: 'the surfgrad package is not available' };
  const id = nextId++;
  return new Promise((resolve, reject) => {
    parses.set(id, { resolve, reject });
    worker.postMessage({ ...msg, id }, transfer);
  });
}
const parseNpy = (bytes, name) => ask({ type: 'parse', bytes, name }, [bytes]);

// ---- data ---------------------------------------------------------------------------------------

function limitN(n) {
  const v = Number(params.get('n'));
  return Number.isInteger(v) && v > 0 ? Math.min(v, n) : n;
}

function setData(data) {
  if (page.tiles) { page.tiles.close(); page.tiles = null; } // (a tiled map was open)
  page.data = data;
  page.result = null;
  view.clear();
  if (data.table) view.setCategories(data.categories);
  else view.setLabels(data.labels && data.labels.length === data.n ? data.labels : null);
  view.rowText = data.cols && data.labelColumn ? async (i) => (await ask({ type: 'row', i })).text : null;
  $('table-columns').hidden = !data.cols;
  $('labels-form').hidden = !!data.cols || data.builtin;
  $('save').hidden = true;
  describeData();
  $('empty').hidden = true;
  $('run').disabled = false;
  $('timings').hidden = true;
  setStatus('Ready', `${data.n.toLocaleString('en-US')} points loaded`);
}

function describeData() {
  const d = page.data;
  if (!d) { $('dataset').textContent = 'No data loaded'; return; }
  const labels = d.table && !d.labels ? (d.labelColumn ? `labels '${d.labelColumn}'` : 'no labels')
    : d.labels ? `${view.cats?.values.length ?? 0} labels` : 'no labels';
  $('dataset').textContent = `${d.name} · ${d.n.toLocaleString('en-US')} × ${d.d} · ${labels}`;
}

const fmtShape = (s) => `(${s.join(', ')}${s.length === 1 ? ',' : ''})`;

async function fetchBytes(url) {
  let res;
  try { res = await fetch(url); } catch (e) { throw { kind: 'io', name: 'FetchError', message: `${url}: ${e.message}` }; }
  if (!res.ok) throw { kind: 'io', name: 'FetchError', message: `${url}: HTTP ${res.status} ${res.statusText}` };
  return res.arrayBuffer();
}

async function loadPoints(bytes, name) {
  const { data, shape } = await parseNpy(bytes, name);
  if (shape.length !== 2)
    throw { kind: 'shape', name: 'DataError', message: `${name}: expected an n × d array of points, got shape ${fmtShape(shape)}` };
  const n = limitN(shape[0]), d = shape[1];
  return { points: n < shape[0] ? data.slice(0, n * d) : data, n, d, labels: null, name: `${name}${n < shape[0] ? ` (first ${n})` : ''}` };
}

async function loadLabels(bytes, name) {
  if (!page.data) throw { kind: 'value', name: 'DataError', message: `${name}: load the points before their labels` };
  const { data, shape } = await parseNpy(bytes, name);
  const count = shape.reduce((a, b) => a * b, 1);
  if (!(shape.length === 1 || (shape.length === 2 && shape[1] === 1)) || count < page.data.n)
    throw { kind: 'shape', name: 'DataError', message: `${name}: expected ${page.data.n} labels (shape (${page.data.n},)), got shape ${fmtShape(shape)}` };
  const labels = new Int32Array(page.data.n);
  for (let i = 0; i < page.data.n; i++) {
    if (!Number.isInteger(data[i])) throw { kind: 'dtype', name: 'DataError', message: `${name}: labels must be integers; entry ${i} is ${data[i]}` };
    labels[i] = data[i];
  }
  page.data.labels = labels;
  view.setLabels(labels);
  describeData();
  if (page.result) view.show(page.result.index ? { ...page.result.xy, spatialIndex: page.result.index } : page.result.xy);
}

// Wraps a loading step: state, status line, error box.
async function loading(what, fn) {
  if (run) { showError({ message: 'cancel the running map first' }, what); return false; }
  clearError();
  setState('loading');
  setStatus('Loading', what);
  const ready = () => (page.data ? setStatus('Ready', `${page.data.n.toLocaleString('en-US')} points loaded`) : setStatus('Idle', ''));
  try {
    await fn();
    ready();
    setState('idle');
    return true;
  } catch (e) {
    showError(e, what);
    ready();
    setState(page.data ? 'idle' : 'error');
    return false;
  }
}

const loadMnistClicked = () => loading('MNIST 10k', async () => {
  const m = await loadMnist('/data/mnist10k/', limitN(Infinity));
  setData(m);
});
const baseName = (url) => url.split('?')[0].split('/').pop() || url;
// Any URL goes to the worker, which tells .npy, Parquet and Arrow apart by their first bytes.
const loadUrl = (url) => (/manifest\.json(\?|$)/.test(url) ? openTiles(url)
  : loading(url, () => openTable({ url, name: baseName(url) })));

// ---- a tiled map (tiles.js): drawn progressively from its URL; no worker needed ----------------

async function openTiles(url) {
  page.tiles?.close();
  const budget = Number(params.get('budget')) > 0 ? Number(params.get('budget')) : undefined;
  const fmt = (v) => v.toLocaleString('en-US');
  const density = Number(params.get('tileDensity')) > 0 ? Number(params.get('tileDensity')) : undefined;
  const tiles = new TiledMap(view, {
    budget, density,
    onError: (e) => showError(e, 'Tiles'),
    onStatus: (s) => {
      page.tilesStatus = s;
      setStatus('Tiles', `${fmt(s.loaded)} / ${fmt(s.total)} tiles loaded · ${fmt(s.drawnPoints)} points drawn`
        + `${s.firstViewMs != null ? ` · first view in ${fmtSeconds(s.firstViewMs / 1000)}` : ''}${s.inFlight ? ` · ${s.inFlight} loading` : ''}`);
    },
  });
  page.tiles = tiles;
  view.rowText = null;
  const ok = await loading(url, async () => {
    await tiles.open(url);
    const m = tiles.manifest;
    $('dataset').textContent = `${baseName(url.replace(/\/?(manifest\.json)?(\?.*)?$/, '')) || 'tiles'} · ${fmt(m.points)} points in ${fmt(m.tile_count ?? m.tiles.length)} tiles`;
    $('empty').hidden = true;
    $('run').disabled = true;
  });
  if (ok) tiles.report(); else tiles.close();
  return ok;
}
// For tests and the console: the tiled map's status and a zoom to a rectangle of its coordinates.
window.__tiles = {
  status: () => page.tilesStatus ?? null,
  zoomTo: (x0, y0, x1, y1) => page.tiles?.zoomTo(x0, y0, x1, y1),
  manifest: () => page.tiles?.manifest ?? null,
};

// ---- tables (Parquet, Arrow IPC / Feather): read in the worker, the points never come here -------

// The table parameters as the address says now (a link or a test may change them after load).
const tableParam = (k) => { const p = new URLSearchParams(location.search); return p.has(k) ? p.get(k) : undefined; };
async function openTable(source, { column = tableParam('column')?.split(',').filter(Boolean), labelColumn = tableParam('label') } = {}) {
  const maxBytes = tableParam('maxBytes') !== undefined ? Number(tableParam('maxBytes')) : undefined;
  const r = await ask({ type: 'open-table', ...source, column, labelColumn, maxBytes });
  if (r.format === 'npy') { setData(await loadPoints(await r.blob.arrayBuffer(), source.name)); return; }
  setHeld(r);
}

// Points the worker holds (a table, a streamed .npy, the built-in clusters): the page keeps only
// their labels' categories.
function setHeld(r) {
  const i = r.info;
  setData({
    table: true, name: `${i.name} (${i.format})`, n: i.n, d: i.d, column: i.column, labelColumn: i.labelColumn,
    cols: i.cols, categories: r.labels, builtin: i.format === 'made on the GPU',
  });
  if (i.cols) fillColumnChoices(i);
}
const loadBuiltin = (n) => loading(`built-in clusters (${n.toLocaleString('en-US')})`, async () => setHeld(await ask({ type: 'open-builtin', n })));

// The selects: point columns (lists of numbers; numeric columns together, as the CLI's a,b,c) and
// label columns (text or numbers; none).
function fillColumnChoices(i) {
  const col = $('column'), lab = $('label-column');
  const option = (c) => Object.assign(new Option(c.name, c.name), { title: c.type });
  col.replaceChildren(...i.cols.filter((c) => c.kind === 'points').map(option));
  const numeric = i.cols.filter((c) => c.kind === 'float' || c.kind === 'integer').map((c) => c.name);
  if (numeric.length > 1) col.append(new Option(`numeric columns (${numeric.length})`, numeric.join(',')));
  col.value = i.column.join(',');
  if (col.value !== i.column.join(',')) { col.append(new Option(i.column.join(','), i.column.join(','))); col.value = i.column.join(','); }
  lab.replaceChildren(new Option('none', ''),
    ...i.cols.filter((c) => ['text', 'integer', 'float'].includes(c.kind)).map(option));
  lab.value = i.labelColumn ?? '';
}
const reopenTable = () => loading(page.data?.name ?? 'table', () => openTable({}, {
  column: $('column').value.split(',').filter(Boolean), labelColumn: $('label-column').value,
}));
$('column').onchange = reopenTable;
$('label-column').onchange = reopenTable;

// ---- saving the map -------------------------------------------------------------------------------

function download(blob, name) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}
const mapName = () => `${(page.data?.name ?? 'points').replace(/\s*\(.*$/, '').replace(/\.[^.]*$/, '')}_${run?.method ?? page.result?.method ?? 'map'}`;

// The map as an n × 2 float32 .npy (format 1.0: magic, header padded to 64 bytes, data).
function npyBlob(embedding, n) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${n}, 2), }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const pre = new Uint8Array(10);
  pre.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
  new DataView(pre.buffer).setUint16(8, header.length, true);
  return new Blob([pre, header, embedding.subarray(0, 2 * n)], { type: 'application/octet-stream' });
}
$('save-npy').onclick = () => { if (page.result) download(npyBlob(page.result.embedding, page.result.n), `${mapName()}.npy`); };
$('save-parquet').onclick = async () => {
  if (!page.result) return;
  try {
    const copy = page.result.embedding.slice(0, 2 * page.result.n);
    // An .npy's integer labels go along (a table's label column is in the worker already).
    const labels = page.data?.labels?.length === page.result.n ? page.data.labels.slice() : null;
    const r = await ask({ type: 'save-parquet', embedding: copy, labels }, [copy.buffer, ...(labels ? [labels.buffer] : [])]);
    page.saved = r.bytes; // for tests
    download(new Blob([r.bytes]), `${mapName()}.parquet`);
  } catch (e) { showError(e, 'Save map'); }
};
const loadLabelsUrl = (url) => loading(url, async () => loadLabels(await fetchBytes(url), url.split('/').pop()));

async function loadFiles(files) {
  for (const f of files) {
    if (/^manifest\.json$/i.test(f.name)) {
      showError({ name: 'TilesError', message: 'a tiled map is opened by its URL (?tiles=URL of its folder, or the URL of manifest.json in the data box): the page fetches its tiles beside the manifest, which a dropped file does not give' }, f.name);
      continue;
    }
    const npy = /\.npy$/i.test(f.name);
    // A 1-D .npy (or n×1) after points are loaded is taken as labels.
    if (page.data && npy && /label|target|class|^y[._]/i.test(f.name)) {
      await loading(f.name, async () => loadLabels(await f.arrayBuffer(), f.name));
      continue;
    }
    await loading(f.name, async () => {
      try { await openTable({ blob: f, name: f.name }); }
      catch (e) {
        if (page.data && npy && e.kind === 'shape') return loadLabels(await f.arrayBuffer(), f.name);
        throw e;
      }
    });
  }
}

$('load-mnist').onclick = loadMnistClicked;
$('data-form').onsubmit = (e) => { e.preventDefault(); const u = $('data-url').value.trim(); if (u) loadUrl(u); };
$('labels-form').onsubmit = (e) => { e.preventDefault(); const u = $('labels-url').value.trim(); if (u) loadLabelsUrl(u); };
$('data-file').onchange = (e) => { loadFiles([...e.target.files]); e.target.value = ''; };
$('labels-file').onchange = async (e) => {
  const f = e.target.files[0]; e.target.value = '';
  if (f) loading(f.name, async () => loadLabels(await f.arrayBuffer(), f.name));
};

const stage = $('stage');
let dragDepth = 0;
stage.addEventListener('dragenter', (e) => { e.preventDefault(); dragDepth++; stage.classList.add('dragging'); });
stage.addEventListener('dragover', (e) => e.preventDefault());
stage.addEventListener('dragleave', () => { if (--dragDepth <= 0) { dragDepth = 0; stage.classList.remove('dragging'); } });
stage.addEventListener('drop', (e) => {
  e.preventDefault(); dragDepth = 0; stage.classList.remove('dragging');
  const files = [...(e.dataTransfer?.files ?? [])];
  // Points first, then labels.
  files.sort((a, b) => /label|target|class/i.test(a.name) - /label|target|class/i.test(b.name));
  loadFiles(files);
});

// ---- options ------------------------------------------------------------------------------------

function method() { return document.querySelector('input[name=method]:checked').value; }
function syncMethod() {
  const m = method();
  for (const el of document.querySelectorAll('[data-method]')) el.hidden = el.dataset.method !== m;
}
document.querySelectorAll('input[name=method]').forEach((r) => { r.onchange = syncMethod; });

// The schema's record of a JavaScript option name for method m (null before the package is loaded,
// or with the dev mock, which has none: the library then checks the value itself).
function specFor(name, m) {
  return page.schema?.find((s) => s.js === name && (s.method === '' || s.method === m)) ?? null;
}

// Inputs for every option of the schema the form does not show (each with its range, default and
// documentation as a tooltip), hidden with the other method's.
function buildMoreOptions() {
  if (!page.schema) return;
  const shown = new Set([...document.querySelectorAll('[data-option]')].map((el) => `${el.dataset.option}`));
  const box = $('more-options-fields');
  box.textContent = '';
  for (const s of page.schema) {
    if (s.js === 'method' || shown.has(s.js)) continue;
    const label = document.createElement('label');
    if (s.method) label.dataset.method = s.method;
    label.append(s.key.replace(/_/g, ' '));
    let input;
    if (s.type === 'choice') {
      input = document.createElement('select');
      // The empty choice is the library's default, shown by its word.
      for (const c of ['', ...s.choices.filter((w) => w !== s.default)]) input.append(new Option(c === '' ? s.default : c, c));
    } else {
      input = document.createElement('input');
      input.type = 'text';
      input.inputMode = 'decimal';
      input.placeholder = s.default;
    }
    input.dataset.option = s.js;
    input.title = `${s.doc}: ${s.range}; default ${s.default}${s.automatic ? ` (auto: ${s.automaticDoc})` : ''}`;
    if (params.has(s.js)) input.value = params.get(s.js);
    label.append(input);
    box.append(label);
  }
  $('more-options').hidden = box.childElementCount === 0;
  syncMethod();
}

// A field's value by its option's schema; empty means "library default" (undefined).
function optionValue(el, m) {
  const raw = el.value.trim();
  if (raw === '') return undefined;
  const s = specFor(el.dataset.option, m);
  const fail = (why) => {
    el.focus();
    throw { kind: 'value', name: 'OptionError', message: `${s?.key ?? el.dataset.option} must be ${why}, got '${raw}'` };
  };
  if (s?.type === 'choice') return s.choices.includes(raw) ? raw : fail(`one of ${s.range}`);
  if (s?.automatic && raw === 'auto') return 'auto';
  const v = Number(raw);
  if (!Number.isFinite(v)) fail(s?.range ?? 'a number');
  if (!s) return v;
  const inRange = (s.automatic && v === 0) ||
    ((s.loOpen ? v > s.lo : v >= s.lo) && (s.hiOpen ? v < s.hi : v <= s.hi) && (s.type !== 'integer' || Number.isInteger(v)));
  return inRange ? v : fail(s.range);
}

function readOptions() {
  const m = method();
  const o = {};
  for (const el of document.querySelectorAll('[data-option]')) {
    if (el.closest('[data-method]') && el.closest('[data-method]').dataset.method !== m) continue;
    const v = optionValue(el, m);
    if (v !== undefined) o[el.dataset.option] = v;
  }
  return { method: m, options: o };
}

function applyParams() {
  const m = params.get('method');
  if (m === 'tsne' || m === 'umap') document.querySelector(`input[name=method][value=${m}]`).checked = true;
  // The form's fields by their options' JavaScript names (and `exaggeration`, the older name).
  if (params.has('exaggeration') && !params.has('earlyExaggeration')) params.set('earlyExaggeration', params.get('exaggeration'));
  for (const el of document.querySelectorAll('[data-option]')) if (params.has(el.dataset.option)) el.value = params.get(el.dataset.option);
  syncMethod();
}

// ---- running ------------------------------------------------------------------------------------

function setStatus(phase, detail) {
  $('phase').textContent = phase;
  $('phase-detail').textContent = detail ?? '';
}

function fmtSeconds(s) { return s < 10 ? `${s.toFixed(2)} s` : s < 100 ? `${s.toFixed(1)} s` : `${Math.round(s)} s`; }

let starting = false; // (set across startRun's await: a second call meanwhile must not start a second map)
async function startRun() {
  if (run || starting || !page.data) return;
  clearError();
  let req;
  try { req = readOptions(); } catch (e) { showError(e, 'Options'); return; }
  starting = true;
  const ok = await ready;
  starting = false;
  if (!ok) { showError({ kind: 'device', message: 'the surfgrad package is not available (see above)' }, 'Run'); return; }
  if (run) return;
  const { points, n, d, table } = page.data;
  req.options.progressEvery = n > 500000 ? 50 : n > 100000 ? 25 : 10;
  setState('running');
  page.result = null;
  page.draws = 0;
  page.drawn = false;
  $('run').disabled = true;
  $('cancel').disabled = false;
  $('timings').hidden = true;
  $('bar').style.width = '0%';
  $('bar').classList.remove('done');
  run = { start: performance.now(), method: req.method, n };
  run.timer = setInterval(() => { $('elapsed').textContent = fmtSeconds((performance.now() - run.start) / 1000); }, 100);
  setStatus(req.method === 'tsne' ? 't-SNE' : 'UMAP', 'starting…');
  $('save').hidden = true;
  const livePoints = Number(params.get('livePoints')) > 0 ? Number(params.get('livePoints')) : undefined;
  if (table) {
    worker.postMessage({ type: 'run', table: true, method: req.method, options: req.options, livePoints });
    return;
  }
  // The worker gets a copy: the page keeps its points for another run.
  const copy = points.slice();
  worker.postMessage({ type: 'run', points: copy, d, method: req.method, options: req.options, livePoints }, [copy.buffer]);
}

const phaseNames = { pca: 'PCA', knn: 'Nearest neighbours', graph: 'Affinities', layout: 'Layout' };

function onProgress(m) {
  if (!run) return;
  if (m.wasmMemoryBytes > (page.wasmMemoryBytes ?? 0)) page.wasmMemoryBytes = m.wasmMemoryBytes; // (the worker's peak, for benchmarks)
  const frac = m.total > 0 ? m.done / m.total : 0;
  setStatus(phaseNames[m.phase] ?? m.phase, `${m.done.toLocaleString('en-US')} / ${m.total.toLocaleString('en-US')}`);
  $('bar').style.width = `${(100 * frac).toFixed(1)}%`;
  if (m.xy) { page.draws++; view.show(m.xy); }
}

function onResult(m) {
  if (!run) return;
  const elapsed = (performance.now() - run.start) / 1000;
  page.result = { embedding: m.embedding, xy: m.xy, n: m.n, method: run.method, timings: m.timings, approximateKnn: m.approximateKnn, knnRecall: m.knnRecall, pipelines: m.pipelines, elapsed };
  $('save').hidden = false;
  $('bar').style.width = '100%';
  $('bar').classList.add('done');
  const label = run.method === 'tsne' ? 't-SNE' : 'UMAP';
  endRun('done');
  setStatus('Done', `${label} of ${m.n.toLocaleString('en-US')} points in ${fmtSeconds(elapsed)}`);
  $('elapsed').textContent = fmtSeconds(elapsed);
  showTimings(page.result);
  // A large layout comes on in the next message with its hover index (map_worker.js postIndex).
  if (m.indexFollows) { page.awaitingIndex = page.result; return; }
  view.show(m.xy).then(() => { page.drawn = true; });
}

function onIndex(m) {
  const r = page.awaitingIndex;
  page.awaitingIndex = null;
  if (!r || page.result !== r) return; // (another data set or run since)
  r.xy = m.xy;
  r.index = m.index ?? undefined;
  r.indexSeconds = m.seconds;
  view.show({ ...m.xy, spatialIndex: m.index ?? undefined }).then(() => { page.drawn = true; });
}

function showTimings(r) {
  const body = $('timings-body');
  body.replaceChildren();
  const entries = Object.entries(r.timings || {});
  const total = r.timings?.total ?? entries.reduce((a, [, v]) => a + v, 0);
  for (const [k, v] of entries) {
    if (k === 'total') continue;
    const tr = document.createElement('tr');
    const pct = total > 0 ? ` <span class="pct">${Math.round((100 * v) / total)}%</span>` : '';
    tr.innerHTML = `<td></td><td class="num">${fmtSeconds(v)}${pct}</td>`;
    tr.firstChild.textContent = phaseNames[k] ?? k;
    body.append(tr);
  }
  const tr = document.createElement('tr');
  tr.className = 'total';
  tr.innerHTML = `<td>Total</td><td class="num">${fmtSeconds(total)}</td>`;
  body.append(tr);
  const knn = r.approximateKnn ? `approximate kNN${r.knnRecall != null ? `, recall ${r.knnRecall.toFixed(3)}` : ''}` : 'exact kNN';
  $('timings-note').textContent = knn;
  $('timings').hidden = false;
}

function endRun(state) {
  if (!run) return;
  clearInterval(run.timer);
  clearTimeout(run.killTimer);
  run = null;
  $('run').disabled = !page.data;
  $('cancel').disabled = true;
  setState(state);
}

function cancelRun() {
  if (!run) return;
  worker.postMessage({ type: 'cancel' });
  setStatus('Cancelling…', '');
  $('cancel').disabled = true;
  // If the library never returns to the event loop, stop the worker outright and start another.
  run.killTimer = setTimeout(() => {
    if (!run) return;
    worker.terminate();
    endRun('cancelled');
    setStatus('Cancelled', 'the worker did not answer in 5 s; restarted it');
    startWorker();
  }, 5000);
}

// (Run is the options form's submit button: the form's submit event starts the run, for a click
// and for Enter alike; an onclick as well started two maps at once.)
$('cancel').onclick = cancelRun;
$('reset-view').onclick = () => view.resetView();
$('options-form').onsubmit = (e) => { e.preventDefault(); startRun(); };

// ---- start --------------------------------------------------------------------------------------

applyParams();
startWorker();
if (params.get('tiles')) { $('data-url').value = params.get('tiles'); openTiles(params.get('tiles')); }
ready.then(async (ok) => {
  if (page.state === 'starting') setState(ok ? 'idle' : 'error');
  if (!ok) return;
  const data = params.get('data'), labels = params.get('labels');
  let loaded = false;
  if (params.get('tiles')) return;
  if (data === 'mnist10k') loaded = await loadMnistClicked();
  else if (data === 'builtin') loaded = await loadBuiltin(Number(params.get('n')) || 100000);
  else if (data) {
    $('data-url').value = data;
    loaded = await loadUrl(data);
    if (loaded && labels) { $('labels-url').value = labels; loaded = await loadLabelsUrl(labels); }
  }
  if (loaded && params.get('run') === '1') startRun();
});
