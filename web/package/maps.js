// Maps: t-SNE and UMAP through the library's map_points(), and .npy decoding.
import { checkPointSource, holdPoints, isPointSource } from './points.js';
import { SurfgradError, cString, fail, requireModule, resultJson, serialized, setMapProgress } from './runtime.js';

/**
 * A .npy file's bytes → { data: Float32Array (a copy of every value as float32), shape, dtype }.
 * Any numeric dtype; a malformed or truncated file throws a SurfgradError (kind 'io').
 */
export function readNpy(bytes) {
  const { exports } = requireModule('readNpy');
  const input = bytes instanceof ArrayBuffer ? new Uint8Array(bytes)
                : ArrayBuffer.isView(bytes) ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : null;
  if (!input) throw new SurfgradError('value', 'readNpy: expected an ArrayBuffer or Uint8Array of a .npy file');
  const p = exports.sg_alloc(input.length);
  new Uint8Array(exports.memory.buffer, p, input.length).set(input);
  const values = exports.sg_decode_npy(p, input.length);
  exports.sg_free(p);
  if (!values) throw fail(exports);
  const { shape, dtype } = resultJson(exports);
  const count = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(exports.memory.buffer, values, count).slice();
  exports.sg_free(values);
  return { data, shape, dtype };
}

let schema = null;

/**
 * The map options' schema, from the library (the same records as `surfgrad map --help` and the
 * Python estimators): [{ key, cli, js, python, method: 'tsne'|'umap'|'', type:
 * 'integer'|'number'|'choice', default, range, lo, hi, loOpen, hiOpen, automatic, choices, doc }].
 */
export function mapOptionSchema() {
  if (!schema) {
    const { exports } = requireModule('mapOptionSchema');
    if (exports.sg_map_option_schema() !== 0) throw fail(exports);
    schema = resultJson(exports);
  }
  return schema;
}

// The JavaScript names of a method's options ('method' is the function called, not an option).
const mapOptionNames = (method) =>
  mapOptionSchema().filter((s) => (s.method === '' || s.method === method) && s.js !== 'method').map((s) => s.js);
const controlOptions = ['onProgress', 'signal', 'progressEvery'];

// The options split into the library's (checked against the schema's names) and the controls.
function mapControls(method, name, options) {
  const known = new Set([...mapOptionNames(method), ...controlOptions]);
  const libraryOptions = {};
  for (const [key, value] of Object.entries(options)) {
    if (!known.has(key))
      throw new SurfgradError('value', `${name}: unknown option '${key}' (options: ${[...known].join(', ')})`);
    if (value !== undefined && !controlOptions.includes(key)) libraryOptions[key] = value;
  }
  const { onProgress, signal } = options;
  const progressEvery = options.progressEvery ?? (onProgress ? 10 : 0);
  if (!Number.isInteger(progressEvery) || progressEvery < 0)
    throw new SurfgradError('value', `${name}: progressEvery must be a whole number ≥ 0, not ${progressEvery}`);
  if (signal?.aborted) throw new SurfgradError('cancelled', `${name}: cancelled before it started`);
  return { libraryOptions, onProgress, signal, progressEvery };
}

async function map(method, name, points, d, options) {
  // tsne({data, shape}, options) and tsne(pointSource, options) as well as tsne(points, d, options).
  if (isPointSource(points)) return mapSource(method, name, points, d || {});
  if (points && !ArrayBuffer.isView(points) && !Array.isArray(points) && points.data && points.shape) {
    options = d;
    if (points.shape.length !== 2)
      throw new SurfgradError('shape', `${name}: points must be 2-D (n × d), not shape [${points.shape}]`);
    d = points.shape[1];
    points = points.data;
  }
  options = options || {};
  const { exports } = requireModule(name);
  if (!(points instanceof Float32Array)) {
    if (!ArrayBuffer.isView(points) && !Array.isArray(points))
      throw new SurfgradError('value', `${name}: points must be a Float32Array of n × d values, or a point source { n, d, blocks }`);
    points = Float32Array.from(points);
  }
  if (!Number.isInteger(d) || d <= 0)
    throw new SurfgradError('shape', `${name}: d (values per point) must be a positive integer, not ${d}`);
  if (points.length % d !== 0)
    throw new SurfgradError('shape', `${name}: ${points.length} values are not n points of d = ${d}`);
  const n = points.length / d;
  const controls = mapControls(method, name, options);

  return serialized(async () => {
    const pointsPtr = exports.sg_alloc(n * d * 4);
    if (!pointsPtr) throw new SurfgradError('memory', `${name}: no WebAssembly memory for ${n} × ${d} points`);
    try {
      new Float32Array(exports.memory.buffer, pointsPtr, n * d).set(points);
      return await runMap(exports, method, name, n, controls,
                          (methodPtr, optionsPtr, outPtr) => exports.sg_map(methodPtr, optionsPtr, pointsPtr, n, d, outPtr,
                                                                            controls.progressEvery));
    } finally {
      exports.sg_free(pointsPtr);
    }
  });
}

// A PointSource (points.js) streamed into the GPU, or the built-in points generated there, then
// mapped: the options are checked before the upload, and the upload can be cancelled.
function mapSource(method, name, source, options) {
  const { exports } = requireModule(name);
  checkPointSource(name, source);
  const { n, d } = source;
  const controls = mapControls(method, name, options);
  const { onProgress, signal } = controls;
  return serialized(async () => {
    const check = (methodPtr, optionsPtr) => exports.sg_map_check(methodPtr, optionsPtr, n, d, source.builtin ? 1 : 0);
    await withStrings(exports, method, controls.libraryOptions, async (methodPtr, optionsPtr) => {
      if (await check(methodPtr, optionsPtr) !== 0) throw fail(exports);
    });
    const held = await holdPoints(exports, name, source, {
      stop: () => !!signal?.aborted,
      progress: (done) => !!signal?.aborted || (onProgress ? onProgress({ phase: 'upload', done, total: n }) === true : false),
    });
    try {
      const r = await runMap(exports, method, name, n, controls,
                             (methodPtr, optionsPtr, outPtr) => exports.sg_map_held(methodPtr, optionsPtr, outPtr,
                                                                                    controls.progressEvery));
      r.timings = { [source.builtin ? 'generate' : 'upload']: held.seconds, ...r.timings };
      if (held.labels) r.labels = held.labels;
      return r;
    } finally {
      exports.sg_points_release();  // a map that failed its checks leaves them held
    }
  });
}

async function withStrings(exports, method, libraryOptions, body) {
  const methodPtr = cString(exports, method);
  const optionsPtr = cString(exports, JSON.stringify(libraryOptions));
  try {
    return await body(methodPtr, optionsPtr);
  } finally {
    exports.sg_free(methodPtr);
    exports.sg_free(optionsPtr);
  }
}

// Runs one map export (`call(methodPtr, optionsPtr, outPtr)`) with progress events and builds the result.
async function runMap(exports, method, name, n, { libraryOptions, onProgress, signal }, call) {
  const outPtr = exports.sg_alloc(n * 8);
  if (!outPtr) throw new SurfgradError('memory', `${name}: no WebAssembly memory for the ${n} × 2 embedding`);
  setMapProgress((phasePtr, phaseLength, done, total, embeddingPtr, count) => {
    if (signal?.aborted) return 1;
    if (!onProgress) return 0;
    const phase = new TextDecoder().decode(new Uint8Array(exports.memory.buffer, phasePtr, phaseLength).slice());
    const event = { phase, done, total };
    if (embeddingPtr) event.embedding = new Float32Array(exports.memory.buffer, embeddingPtr, count * 2).slice();
    return onProgress(event) === true ? 1 : 0;
  });
  try {
    return await withStrings(exports, method, libraryOptions, async (methodPtr, optionsPtr) => {
      const rc = await call(methodPtr, optionsPtr, outPtr);
      if (rc !== 0) throw fail(exports);
      const embedding = new Float32Array(exports.memory.buffer, outPtr, n * 2).slice();
      const r = resultJson(exports);
      const timings = {};
      for (const p of r.phases) timings[p.name] = p.seconds;
      return {
        embedding, n, timings, phases: r.phases, k: r.k, pcaComponents: r.pcaComponents,
        approximateKnn: r.approximateKnn, knnRecall: r.knnRecall >= 0 ? r.knnRecall : undefined,
        gpuPeakBytes: r.gpuPeakBytes, wasmMemoryBytes: exports.memory.buffer.byteLength,
      };
    });
  } finally {
    setMapProgress(null);
    exports.sg_free(outPtr);
  }
}

/**
 * t-SNE of n points of d values (points: Float32Array of n·d, row-major) → { embedding
 * (Float32Array n·2), timings, ... }. Or tsne(source, options) with a point source { n, d,
 * blocks } (points.js: streamed into the GPU in row blocks, never whole in the wasm heap;
 * timings.upload), builtinPoints(n) (timings.generate, labels) or npyPoints(file). Options, ranges and defaults are the library's schema
 * (mapOptionSchema(): perplexity 30, iterations 750, earlyExaggeration 12, learningRate 'auto',
 * init 'pca', seed 1, ...). onProgress
 * receives { phase, done, total, embedding? } (embedding every progressEvery steps, default 10
 * when onProgress is given) and may return true to cancel; an aborted `signal` cancels too. A
 * cancelled map rejects with a SurfgradError of kind 'cancelled'.
 */
export function tsne(points, d, options) {
  return map('tsne', 'tsne', points, d, options);
}

/** UMAP, as tsne() (nNeighbors 15, minDist 0.1, epochs 500 up to 10,000 points, else 200). */
export function umap(points, d, options) {
  return map('umap', 'umap', points, d, options);
}
