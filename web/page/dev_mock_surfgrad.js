// A stand-in for web/package/surfgrad.js with the same API, for developing the map page before
// the WebAssembly package exists. Loaded by map_worker.js only when the page URL has ?mock=1.
// init() returns a fake DeviceInfo; readNpy() is a real .npy reader; tsne()/umap() do no real
// embedding: they cluster the points crudely (random projection + k-means) and animate from random
// positions to one blob per cluster over ~2 s, with progress events, cancellation and errors.

export class SurfgradError extends Error {
  constructor(kind, message) {
    super(message);
    this.name = 'SurfgradError';
    this.kind = kind;
  }
}

export async function init() {
  return {
    adapter: 'Mock adapter (dev_mock_surfgrad.js)',
    vendor: 'mock',
    architecture: 'none',
    backend: 'mock',
    implementation: 'dev mock, no GPU work',
    features: ['subgroups', 'timestamp-query'],
    limits: { maxStorageBufferBindingSize: 1 << 30, maxBufferSize: 1 << 30 },
  };
}

// ---- .npy ---------------------------------------------------------------------------------------

const readers = {
  f4: (v, o, le) => v.getFloat32(o, le), f8: (v, o, le) => v.getFloat64(o, le),
  i1: (v, o) => v.getInt8(o), u1: (v, o) => v.getUint8(o), b1: (v, o) => v.getUint8(o),
  i2: (v, o, le) => v.getInt16(o, le), u2: (v, o, le) => v.getUint16(o, le),
  i4: (v, o, le) => v.getInt32(o, le), u4: (v, o, le) => v.getUint32(o, le),
  i8: (v, o, le) => Number(v.getBigInt64(o, le)), u8: (v, o, le) => Number(v.getBigUint64(o, le)),
};

export function readNpy(bytes) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  const view = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  const magic = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59];
  if (u8.length < 10 || magic.some((b, i) => u8[i] !== b))
    throw new SurfgradError('io', `readNpy: not a .npy file (no \\x93NUMPY magic; ${u8.length} bytes)`);
  const major = u8[6];
  const headerLen = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const start = major === 1 ? 10 : 12;
  const header = new TextDecoder('latin1').decode(u8.subarray(start, start + headerLen));
  const descr = /'descr'\s*:\s*'([<>|=])(\w)(\d+)'/.exec(header);
  const shapeM = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !shapeM) throw new SurfgradError('io', `readNpy: unreadable header: ${header.trim()}`);
  if (/'fortran_order'\s*:\s*True/.test(header))
    throw new SurfgradError('value', 'readNpy: Fortran-ordered arrays are not supported');
  const dtype = descr[2] + descr[3];
  const read = readers[dtype];
  if (!read) throw new SurfgradError('dtype', `readNpy: unsupported dtype '${descr[1]}${dtype}'`);
  const shape = shapeM[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const size = Number(descr[3]);
  const dataStart = start + headerLen;
  if (dataStart + count * size > u8.length)
    throw new SurfgradError('io', `readNpy: file truncated: shape (${shape}) needs ${count * size} bytes, has ${u8.length - dataStart}`);
  const le = descr[1] !== '>';
  const data = new Float32Array(count);
  for (let i = 0; i < count; i++) data[i] = read(view, dataStart + i * size, le);
  return { data, shape, dtype: descr[1] + dtype };
}

// ---- fake maps ----------------------------------------------------------------------------------

function rng(seed) {
  let s = (seed >>> 0) || 1;
  return () => {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return s / 4294967296;
  };
}
const gauss = (r) => Math.sqrt(-2 * Math.log(r() + 1e-12)) * Math.cos(2 * Math.PI * r());
const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

// Random projection to 16-D, then a few rounds of k-means: cluster ids that stand in for labels.
function crudeClusters(points, n, d, k, r) {
  const p = 16;
  const proj = new Float32Array(d * p).map(() => gauss(r));
  const y = new Float32Array(n * p);
  for (let i = 0; i < n; i++)
    for (let j = 0; j < d; j++) {
      const v = points[i * d + j];
      if (v === 0) continue;
      for (let c = 0; c < p; c++) y[i * p + c] += v * proj[j * p + c];
    }
  const cent = new Float32Array(k * p);
  for (let c = 0; c < k; c++) { const i = Math.floor(r() * n); cent.set(y.subarray(i * p, i * p + p), c * p); }
  const id = new Int32Array(n);
  for (let it = 0; it < 8; it++) {
    for (let i = 0; i < n; i++) {
      let best = 0, bd = Infinity;
      for (let c = 0; c < k; c++) {
        let s = 0;
        for (let q = 0; q < p; q++) { const t = y[i * p + q] - cent[c * p + q]; s += t * t; }
        if (s < bd) { bd = s; best = c; }
      }
      id[i] = best;
    }
    const cnt = new Float32Array(k);
    cent.fill(0);
    for (let i = 0; i < n; i++) { cnt[id[i]]++; for (let q = 0; q < p; q++) cent[id[i] * p + q] += y[i * p + q]; }
    for (let c = 0; c < k; c++) for (let q = 0; q < p; q++) cent[c * p + q] /= Math.max(cnt[c], 1);
  }
  return id;
}

async function fakeMap(method, points, d, options = {}, total) {
  const t0 = performance.now();
  if (!(points instanceof Float32Array)) throw new SurfgradError('dtype', `${method}: points must be a Float32Array`);
  if (!Number.isInteger(d) || d < 1) throw new SurfgradError('shape', `${method}: d must be a positive integer, got ${d}`);
  if (points.length % d !== 0) throw new SurfgradError('shape', `${method}: ${points.length} values are not a multiple of d = ${d}`);
  const n = points.length / d;
  if (n < 4) throw new SurfgradError('shape', `${method}: need at least 4 points, got ${n}`);
  for (let i = 0; i < points.length; i++)
    if (!Number.isFinite(points[i])) throw new SurfgradError('value', `${method}: points[${i}] is not finite (${points[i]})`);
  const every = options.progressEvery ?? 10;
  const timings = {};
  let cancelled = false;
  const check = (p) => {
    if (options.signal?.aborted || options.onProgress?.(p) === true) cancelled = true;
    if (cancelled) throw new SurfgradError('cancelled', `${method}: cancelled in phase '${p.phase}' at ${p.done}/${p.total}`);
  };
  const r = rng(options.seed ?? 42);
  let t = performance.now();
  for (const phase of ['pca', 'knn', 'graph']) {
    check({ phase, done: 0, total: 1 });
    await sleep(120);
    check({ phase, done: 1, total: 1 });
    timings[phase] = (performance.now() - t) / 1000; t = performance.now();
  }
  const id = crudeClusters(points, n, d, 10, r);
  const start = new Float32Array(2 * n).map(() => gauss(r) * 10);
  const centres = Array.from({ length: 10 }, (_, c) => [Math.cos(c * 0.628) * 30, Math.sin(c * 0.628) * 30]);
  const target = new Float32Array(2 * n);
  for (let i = 0; i < n; i++) {
    target[2 * i] = centres[id[i]][0] + gauss(r) * 3;
    target[2 * i + 1] = centres[id[i]][1] + gauss(r) * 3;
  }
  const emb = new Float32Array(2 * n);
  const steps = total;
  const stepMs = 1600 / steps;
  for (let it = 1; it <= steps; it++) {
    const a = 1 - Math.pow(1 - it / steps, 3);
    for (let i = 0; i < 2 * n; i++) emb[i] = start[i] + (target[i] - start[i]) * a;
    const p = { phase: 'layout', done: it, total: steps };
    if (it % every === 0 || it === steps) p.embedding = emb;
    check(p);
    if (it % 5 === 0) await sleep(stepMs * 5);
  }
  timings.layout = (performance.now() - t) / 1000;
  timings.total = (performance.now() - t0) / 1000;
  return { embedding: emb.slice(), n, timings, approximateKnn: n > 5000, knnRecall: n > 5000 ? 0.97 : undefined };
}

export const tsne = (points, d, options = {}) => fakeMap('tsne', points, d, options, options.iterations ?? 750);
export const umap = (points, d, options = {}) => fakeMap('umap', points, d, options, options.epochs ?? (points.length / d > 10000 ? 200 : 500));
