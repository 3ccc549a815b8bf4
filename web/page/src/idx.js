// IDX files (the MNIST format): big-endian uint32 magic 0x0000TTNN (TT = element type, NN = number
// of dimensions), one big-endian uint32 per dimension, then the raw data. MNIST is uint8 (0x08).
// Files ending in .gz are gunzipped with the browser's DecompressionStream.

export class IdxError extends Error {
  constructor(message) { super(message); this.name = 'IdxError'; this.kind = 'io'; }
}

export function parseIdx(buffer, name = 'IDX file') {
  const u8 = new Uint8Array(buffer);
  if (u8.length < 4) throw new IdxError(`${name}: too short for an IDX header (${u8.length} bytes)`);
  const view = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  const magic = view.getUint32(0, false);
  const type = (magic >>> 8) & 0xff, rank = magic & 0xff;
  if (magic >>> 16 !== 0 || type !== 0x08 || rank < 1 || rank > 4)
    throw new IdxError(`${name}: not a uint8 IDX file (magic 0x${magic.toString(16).padStart(8, '0')})`);
  if (u8.length < 4 + 4 * rank) throw new IdxError(`${name}: header truncated`);
  const dims = Array.from({ length: rank }, (_, i) => view.getUint32(4 + 4 * i, false));
  const count = dims.reduce((a, b) => a * b, 1);
  const start = 4 + 4 * rank;
  if (u8.length - start < count)
    throw new IdxError(`${name}: data truncated: dims ${dims.join('×')} need ${count} bytes, file has ${u8.length - start}`);
  return { magic, dims, data: u8.subarray(start, start + count) };
}

export async function gunzip(buffer) {
  const stream = new Blob([buffer]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Response(stream).arrayBuffer();
}

async function fetchBytes(url) {
  const res = await fetch(url);
  if (!res.ok) throw new IdxError(`${url}: HTTP ${res.status} ${res.statusText}`);
  const buf = await res.arrayBuffer();
  return url.endsWith('.gz') ? gunzip(buf) : buf;
}

// MNIST test set from a folder holding the two IDX files: images as n×784 float32 in [0, 1].
export async function loadMnist(base = '/data/mnist10k/', limit = Infinity) {
  const [img, lab] = await Promise.all([
    fetchBytes(base + 't10k-images-idx3-ubyte.gz').then((b) => parseIdx(b, 't10k-images-idx3-ubyte')),
    fetchBytes(base + 't10k-labels-idx1-ubyte.gz').then((b) => parseIdx(b, 't10k-labels-idx1-ubyte')),
  ]);
  if (img.dims.length !== 3 || lab.dims.length !== 1 || img.dims[0] !== lab.dims[0])
    throw new IdxError(`MNIST: images ${img.dims.join('×')} and labels ${lab.dims.join('×')} do not match`);
  const n = Math.min(img.dims[0], limit), d = img.dims[1] * img.dims[2];
  const points = new Float32Array(n * d);
  for (let i = 0; i < n * d; i++) points[i] = img.data[i] / 255;
  return { points, n, d, labels: Int32Array.from(lab.data.subarray(0, n)), name: `MNIST 10k${n < img.dims[0] ? ` (first ${n})` : ''}` };
}
