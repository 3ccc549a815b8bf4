// Points streamed into the GPU: a PointSource's row blocks go through a small reused staging area
// of the wasm heap into GPU row blocks (web/src/points_web.cpp), so a data set is never whole in
// JavaScript or in the wasm heap (wasm32: 4 GiB at most; a million 768-D points are 3 GiB).
//
//   PointSource = { n, d, blocks: AsyncIterable<Float32Array> | Iterable<Float32Array> }
//
// Each block holds whole rows, row-major, in order; n rows in all. maps.js maps one; this file
// uploads it, and makes the two sources the package has: builtinPoints(n) and npyPoints(blob).
import { SurfgradError, fail } from './runtime.js';

const stagingBytes = 16 << 20;  // the most the staging area takes of the wasm heap
const builtinDims = 768;        // builtin_point_blocks' dimensions (src/io/builtin_points.cpp)

/** True for a PointSource or a builtinPoints() handle (not a Float32Array or { data, shape }). */
export function isPointSource(x) {
  return !!x && typeof x === 'object' && !ArrayBuffer.isView(x) && !Array.isArray(x) && ('blocks' in x || x.builtin === true);
}

/** Checks a PointSource's n and d, naming the call. */
export function checkPointSource(name, source) {
  for (const key of ['n', 'd'])
    if (!Number.isInteger(source[key]) || source[key] <= 0 || source[key] > 0x7fffffff)
      throw new SurfgradError('shape', `${name}: a point source's ${key} must be a positive integer (≤ 2^31 − 1), not ${source[key]}`);
  if (source.builtin === true) {
    if (source.d !== builtinDims) throw new SurfgradError('shape', `${name}: built-in points have d = ${builtinDims}, not ${source.d}`);
    return;
  }
  const b = source.blocks;
  if (!b || (typeof b[Symbol.asyncIterator] !== 'function' && typeof b[Symbol.iterator] !== 'function'))
    throw new SurfgradError('value', `${name}: a point source's blocks must be an iterable or async iterable of Float32Array`);
}

/**
 * The built-in data set of `surfgrad map` with no input: n points in 768 dimensions, 10 Gaussian
 * clusters, generated on the GPU when mapped (no upload). labels[i] is point i's cluster, i mod
 * 10, as the library defines it (the map's result carries the library's own copy, `labels`).
 */
export function builtinPoints(n) {
  if (!Number.isInteger(n) || n < 1 || n > 0x7fffffff)
    throw new SurfgradError('value', `builtinPoints: ${n} points asked; give a whole number from 1 to 2147483647`);
  const labels = new Int32Array(n);
  for (let i = 0; i < n; i++) labels[i] = i % 10;
  return { n, d: builtinDims, labels, builtin: true };
}

// Uploads the source's rows into the points held on the GPU (sg_points_*), or generates the
// built-in ones. `stop()` is asked between blocks (cancel); `progress(done)` after each.
// Returns { seconds, labels? }. On any error or cancel the held points are released.
export async function holdPoints(exports, name, source, { stop, progress }) {
  const { n, d } = source;
  const t0 = performance.now();
  if (source.builtin === true) {
    const labelsPtr = exports.sg_alloc(n * 4);
    try {
      if (await exports.sg_points_builtin(n, labelsPtr) !== 0) throw fail(exports);
      const labels = new Int32Array(exports.memory.buffer, labelsPtr, n).slice();
      return { seconds: (performance.now() - t0) / 1000, labels };
    } finally {
      exports.sg_free(labelsPtr);
    }
  }
  if (await exports.sg_points_begin(n, d, source.gpuBlockRows ?? 0) !== 0) throw fail(exports);
  const chunkRows = Math.max(1, Math.floor(stagingBytes / (d * 4)));
  let staging = 0, capacity = 0;  // rows; grown to the largest block seen, up to chunkRows
  let rows = 0, index = 0;
  try {
    for await (const block of source.blocks) {
      if (stop()) throw new SurfgradError('cancelled', `${name}: cancelled during the upload (${rows} of ${n} rows written)`);
      if (!(block instanceof Float32Array))
        throw new SurfgradError('value', `${name}: block ${index} of the point source is ${block?.constructor?.name ?? typeof block}, not a Float32Array`);
      if (block.length % d !== 0)
        throw new SurfgradError('shape', `${name}: block ${index} holds ${block.length} values, not whole rows of d = ${d}`);
      const blockRows = block.length / d;
      for (let r0 = 0; r0 < blockRows; r0 += chunkRows) {
        const take = Math.min(chunkRows, blockRows - r0);
        if (take > capacity) {
          if (staging) exports.sg_free(staging);
          capacity = Math.min(chunkRows, Math.max(take, blockRows));
          staging = exports.sg_alloc(capacity * d * 4);
          if (!staging) throw new SurfgradError('memory', `${name}: no WebAssembly memory for a ${capacity * d * 4}-byte staging area`);
        }
        // A fresh view each time: the heap's ArrayBuffer is replaced when memory grows.
        new Float32Array(exports.memory.buffer, staging, take * d).set(block.subarray(r0 * d, (r0 + take) * d));
        if (await exports.sg_points_write(staging, take) !== 0) throw fail(exports);
        rows += take;
      }
      index++;
      if (progress(rows)) throw new SurfgradError('cancelled', `${name}: cancelled during the upload (${rows} of ${n} rows written)`);
    }
    return { seconds: (performance.now() - t0) / 1000 };
  } catch (e) {
    exports.sg_points_release();
    throw e;
  } finally {
    if (staging) exports.sg_free(staging);
  }
}

// ---- .npy files read in row blocks ----

// dtype → (bytes per value, DataView getter → number). The dtypes the library's .npy reader
// takes (src/io/npy_format.cpp); every value becomes float32 as it does.
const npyTypes = {
  '<f4': [4, (v, o) => v.getFloat32(o, true)], '<f8': [8, (v, o) => v.getFloat64(o, true)],
  '<f2': [2, (v, o) => halfToFloat(v.getUint16(o, true))], '<i4': [4, (v, o) => v.getInt32(o, true)],
  '<u4': [4, (v, o) => v.getUint32(o, true)], '<i8': [8, (v, o) => Number(v.getBigInt64(o, true))],
  '<u8': [8, (v, o) => Number(v.getBigUint64(o, true))], '|u1': [1, (v, o) => v.getUint8(o)],
  '<u1': [1, (v, o) => v.getUint8(o)], '|b1': [1, (v, o) => v.getUint8(o)], '|i1': [1, (v, o) => v.getInt8(o)],
  '<i1': [1, (v, o) => v.getInt8(o)],
};

function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1, exponent = (h >> 10) & 0x1f, fraction = h & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 31) return fraction ? NaN : sign * Infinity;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

const npyError = (name, what) => new SurfgradError('io', `npyPoints: '${name}': ${what}`);

// The header dict {'descr': '<f4', 'fortran_order': False, 'shape': (n, d), } → { descr, fortran, shape }.
function parseNpyHeader(text, name) {
  const field = (key, pattern) => {
    const m = text.match(new RegExp(`['"]${key}['"]\\s*:\\s*${pattern}`));
    if (!m) throw npyError(name, `malformed .npy header: no '${key}' field (${JSON.stringify(text.slice(0, 80))}); the file is corrupt or not written by NumPy`);
    return m[1];
  };
  const descr = field('descr', `['"]([^'"]*)['"]`);
  const fortran = field('fortran_order', '(True|False)') === 'True';
  const dims = field('shape', '\\(([^)]*)\\)').split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (!dims.every((s) => /^\d+L?$/.test(s))) throw npyError(name, `malformed .npy shape (${dims.join(', ')})`);
  return { descr, fortran, shape: dims.map((s) => Number(s.replace('L', ''))) };
}

/**
 * A .npy file of n × d numbers (a Blob or File, or an ArrayBuffer) → a PointSource that reads
 * its rows in blocks of about 16 MiB (Blob.slice) and converts each to float32: only the header
 * is read now. dtypes: <f4, <f2, <f8, <i4, <u4, <i8, <u8, |u1, |i1, |b1 (as the library's reader).
 */
export async function npyPoints(file, { blockBytes = stagingBytes } = {}) {
  const blob = file instanceof Blob ? file : file instanceof ArrayBuffer ? new Blob([file]) : null;
  if (!blob) throw new SurfgradError('value', 'npyPoints: expected a Blob, File or ArrayBuffer of a .npy file');
  const name = file.name || 'the .npy file';
  const head = new Uint8Array(await blob.slice(0, 12).arrayBuffer());
  const magic = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59];
  if (head.length < 10 || !magic.every((b, i) => head[i] === b)) throw npyError(name, 'not a .npy file (bad magic; expected \\x93NUMPY)');
  const major = head[6];
  if (major < 1 || major > 3) throw npyError(name, `.npy format version ${major} is not supported (1, 2, 3 are)`);
  const lengthBytes = major === 1 ? 2 : 4;
  const view = new DataView(head.buffer);
  const headerLength = lengthBytes === 2 ? view.getUint16(8, true) : view.getUint32(8, true);
  if (headerLength > 1 << 20) throw npyError(name, `implausible .npy header length ${headerLength} (NumPy's are < 64 KiB)`);
  const dataStart = 8 + lengthBytes + headerLength;
  if (blob.size < dataStart) throw npyError(name, `truncated .npy header (${headerLength} bytes declared)`);
  const text = new TextDecoder('latin1').decode(await blob.slice(8 + lengthBytes, dataStart).arrayBuffer());
  const { descr, fortran, shape } = parseNpyHeader(text, name);
  const type = npyTypes[descr];
  if (!type)
    throw new SurfgradError('dtype', `npyPoints: '${name}': dtype '${descr}' is not supported; use <f4, <f2, <f8, <i4, <u4, <i8, <u8, |u1, |i1 or |b1`);
  if (shape.length !== 2) throw new SurfgradError('shape', `npyPoints: '${name}' holds shape (${shape.join(', ')}); points must be 2-D (n, d)`);
  const [n, d] = shape;
  if (fortran && n > 1 && d > 1)
    throw npyError(name, 'is in Fortran order (columns first), which cannot be read in row blocks; save it with np.ascontiguousarray');
  const [size, get] = type;
  const bytes = n * d * size;
  if (blob.size - dataStart < bytes)
    throw npyError(name, `truncated data: shape (${n}, ${d}) of ${descr} needs ${bytes} bytes, the file holds ${blob.size - dataStart} after its header`);
  const rowsPerBlock = Math.max(1, Math.floor(blockBytes / (d * Math.max(size, 4))));
  async function* blocks() {
    for (let r0 = 0; r0 < n; r0 += rowsPerBlock) {
      const rows = Math.min(rowsPerBlock, n - r0);
      const raw = await blob.slice(dataStart + r0 * d * size, dataStart + (r0 + rows) * d * size).arrayBuffer();
      if (descr === '<f4') {
        yield new Float32Array(raw);
        continue;
      }
      const v = new DataView(raw), out = new Float32Array(rows * d);
      for (let i = 0; i < out.length; i++) out[i] = get(v, i * size);
      yield out;
    }
  }
  return { n, d, shape: [n, d], dtype: descr, blocks: { [Symbol.asyncIterator]: blocks } };
}
