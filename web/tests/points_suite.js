// The browser suite's checks of points streamed into the GPU (web/package/points.js and
// web/src/points_web.cpp): a point source maps bit for bit as the same Float32Array does, blocks
// of any size land in their rows, bad sources are refused by row and column, an upload can be
// cancelled, npyPoints reads what readNpy reads, and the wasm heap does not grow by the points.
import * as sg from '../package/surfgrad.js';
import { seeded } from '../bench/common.js';

// n points of d values in 8 clusters (unseeded or all-equal data would prove nothing).
function clustered(n, d, seed) {
  const r = seeded(seed), centres = Float32Array.from({ length: 8 * d }, () => 6 * r() - 3);
  const x = new Float32Array(n * d);
  for (let i = 0; i < n; i++)
    for (let j = 0; j < d; j++) x[i * d + j] = centres[(i % 8) * d + j] + r() - 0.5;
  return x;
}

// A source of x's rows in blocks of the given row counts (the last repeated), sync or async.
function source(x, d, sizes, { async = false, extra = {} } = {}) {
  const n = x.length / d;
  function* rows() {
    for (let r0 = 0, i = 0; r0 < n; i++) {
      const take = Math.min(sizes[Math.min(i, sizes.length - 1)], n - r0);
      yield x.subarray(r0 * d, (r0 + take) * d);  // views into one buffer
      r0 += take;
    }
  }
  const blocks = async ? { async *[Symbol.asyncIterator]() { yield* rows(); } } : { [Symbol.iterator]: rows };
  return { n, d, blocks, ...extra };
}

const sameBits = (a, b) => a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
function firstDifference(a, b) {
  if (a.length !== b.length) return `length ${a.length} ≠ ${b.length}`;
  const i = a.findIndex((v, k) => !Object.is(v, b[k]));
  return i < 0 ? 'identical' : `index ${i}: ${a[i]} vs ${b[i]}`;
}

function npyBytes(descr, shape, values) {
  const header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}), }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  const text = header + ' '.repeat(pad % 64) + '\n';
  const out = new Uint8Array(10 + text.length + values.byteLength);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, text.length & 0xff, text.length >> 8]);
  out.set(new TextEncoder().encode(text), 10);
  out.set(new Uint8Array(values.buffer, values.byteOffset, values.byteLength), 10 + text.length);
  return out;
}

async function collect(pointSource) {
  const parts = [];
  for await (const b of pointSource.blocks) parts.push(b);
  const out = new Float32Array(parts.reduce((s, b) => s + b.length, 0));
  parts.reduce((at, b) => (out.set(b, at), at + b.length), 0);
  return { out, blocks: parts.length };
}

export async function testPoints(record, expectError) {
  // 1. The heap: a streamed map of 300 × 2048 points (2.4 MiB) in 25-row blocks must not grow
  // the wasm memory by a quarter of the points' bytes, while the same points as a Float32Array
  // do (so the check can fail: suite.js runs this group first, before other tests leave free
  // memory in the heap). Few points of many dimensions: SwiftShader's time goes as n² (kNN),
  // bytes as n·d.
  const [n, d] = [300, 2048];
  const x = clustered(n, d, 71);
  const options = { seed: 1, epochs: 10 };
  // A small streamed map first: what the library keeps whatever the points (kernel sources and
  // caches, ~0.6 MiB by 2026-11-27 evening, past a quarter of these points' bytes) is then in the
  // heap already, and the growth measured below is what the points cost.
  await sg.umap(source(clustered(150, d, 72), d, [25]), options);
  const before = sg.stats().wasmMemoryBytes;
  const streamed = await sg.umap(source(x, d, [25]), options);
  const streamedGrowth = streamed.wasmMemoryBytes - before;
  const whole = await sg.umap(x, d, options);
  const wholeGrowth = whole.wasmMemoryBytes - streamed.wasmMemoryBytes;
  record(`a streamed ${n} × ${d} map grew the wasm memory by < ¼ of the points' ${n * d * 4} bytes, the Float32Array path by more`,
         streamedGrowth < n * d && wholeGrowth >= n * d, `streamed: grew ${streamedGrowth} bytes; Float32Array after it: ${wholeGrowth}`);
  record('a streamed map equals the Float32Array map bit for bit (UMAP, seed 1)', sameBits(streamed.embedding, whole.embedding),
         firstDifference(streamed.embedding, whole.embedding));
  record('a streamed map reports timings.upload', streamed.timings.upload >= 0 && whole.timings.upload === undefined,
         `upload ${streamed.timings.upload} s`);

  // 2. Odd blocks: one row, two rows, then the rest, async; t-SNE against the Float32Array path.
  const [m, e] = [400, 12];
  const y = clustered(m, e, 72);
  const tsneOptions = { seed: 3, iterations: 20, exaggerationIterations: 10, perplexity: 10 };
  const wantTsne = await sg.tsne(y, e, tsneOptions);
  const odd = await sg.tsne(source(y, e, [1, 2, 333, 1], { async: true }), tsneOptions);
  record('blocks of 1, 2, 333 and 1 rows (async) map as the Float32Array does, bit for bit',
         sameBits(odd.embedding, wantTsne.embedding), firstDifference(odd.embedding, wantTsne.embedding));
  // GPU blocks of 256 rows: a 333-row block spans two of them; its rows must land in place
  // (a different block split may round differently, so: close, not bitwise).
  const split = await sg.tsne(source(y, e, [1, 333, 2], { extra: { gpuBlockRows: 256 } }), tsneOptions);
  const scale = Math.max(...wantTsne.embedding.map(Math.abs));
  const worst = Math.max(...split.embedding.map((v, i) => Math.abs(v - wantTsne.embedding[i])));
  record('a block spanning two GPU blocks (256 rows each) lands in its rows: the map within 1e-3 of its scale',
         worst <= 1e-3 * scale, `max |difference| ${worst.toExponential(2)}, scale ${scale.toFixed(2)}`);

  // 3. Bad sources.
  const small = clustered(100, 4, 73);
  await expectError('a source with more rows than n', 'shape', /105 rows given, more than the 100 declared/,
                    () => sg.umap({ n: 100, d: 4, blocks: [small, small.subarray(0, 20)] }));
  await expectError('a source with fewer rows than n', 'shape', /12 of 100 rows written/,
                    () => sg.umap({ n: 100, d: 4, blocks: [small.subarray(0, 48)] }));
  const nan = Float32Array.from(small);
  nan[77 * 4 + 3] = NaN;
  await expectError('NaN in a streamed block, named by row and column', 'value', /row 77, column 3 is NaN/,
                    () => sg.umap(source(nan, 4, [30])));
  await expectError('a block that is not whole rows', 'shape', /block 1 holds 7 values, not whole rows of d = 4/,
                    () => sg.umap({ n: 100, d: 4, blocks: [small.subarray(0, 8), small.subarray(8, 15)] }));
  await expectError('a bad option refused before the upload', 'value', /unknown option 'perplexity'/,
                    () => sg.umap({ n: 100, d: 4, blocks: { [Symbol.iterator]() { throw new Error('read'); } } }, { perplexity: 5 }));

  // 4. Cancel during the upload: by the signal (aborted while blocks arrive) and by onProgress.
  const controller = new AbortController();
  let given = 0;
  const aborting = { n: 100, d: 4, blocks: { async *[Symbol.asyncIterator]() {
    for (let r = 0; r < 100; r += 10) {
      if (r === 20) controller.abort();
      given++;
      yield small.subarray(r * 4, (r + 10) * 4);
    }
  } } };
  await expectError('an upload cancelled by its AbortSignal', 'cancelled', /cancelled during the upload \(20 of 100 rows written\)/,
                    () => sg.umap(aborting, { signal: controller.signal }));
  const phases = [];
  await expectError('an upload cancelled by onProgress returning true', 'cancelled', /during the upload \(30 of 100/,
                    () => sg.umap(source(small, 4, [10]), { onProgress: (p) => (phases.push(p.phase), p.done >= 30) }));
  const after = await sg.umap(source(small, 4, [64]), { epochs: 20 });
  record('a streamed map after the cancels (the held points released)', after.embedding.length === 200 &&
         after.embedding.every(Number.isFinite) && given === 3 && phases.every((p) => p === 'upload'),
         `blocks read before the abort: ${given}; phases ${phases}`);

  // 5. npyPoints reads in row blocks what readNpy reads whole: float32 and float64, and a file too short.
  const values = clustered(90, 7, 74);
  for (const [descr, typed] of [['<f4', values], ['<f8', Float64Array.from(values, (v) => v * 1.000001)]]) {
    const bytes = npyBytes(descr, [90, 7], typed);
    const p = await sg.npyPoints(new Blob([bytes]), { blockBytes: 500 });
    const { out, blocks } = await collect(p);
    const want = sg.readNpy(bytes).data;
    record(`npyPoints of a ${descr} .npy (${blocks} blocks) equals readNpy`, p.n === 90 && p.d === 7 && p.dtype === descr &&
           blocks > 1 && sameBits(out, want), firstDifference(out, want));
  }
  const truncated = npyBytes('<f4', [90, 7], values).slice(0, 500);
  await expectError('npyPoints of a truncated .npy', 'io', /truncated data: shape \(90, 7\) of <f4 needs 2520 bytes/,
                    () => sg.npyPoints(truncated.buffer));
  await expectError('npyPoints of a 3-D .npy', 'shape', /points must be 2-D/,
                    () => sg.npyPoints(npyBytes('<f4', [3, 3, 10], values).buffer));
}

// builtinPoints(n) mapped in the page; the driver maps `surfgrad map --points n` natively with the
// same options and compares. One t-SNE iteration: the map is the points' first two principal
// components (init 'pca') plus one small step, so it shows whether the points are the same.
// (300 points, perplexity 5: SwiftShader's exact kNN in 768-D takes 23 s at 3000 points.)
export const builtinCase = { n: 300, method: 'tsne', options: { seed: 1, iterations: 1, exaggerationIterations: 0, perplexity: 5, pcaComponents: 0 },
                             cli: ['--iterations', '1', '--exaggeration-iterations', '0', '--perplexity', '5', '--seed', '1', '--pca', '0'] };

export async function builtinMap(record) {
  const handle = sg.builtinPoints(builtinCase.n);
  const before = sg.stats().wasmMemoryBytes;
  const r = await sg.tsne(handle, builtinCase.options);
  const same = r.labels && r.labels.length === handle.labels.length && r.labels.every((v, i) => v === handle.labels[i]);
  record('builtinPoints: the labels the library made equal the handle\'s (i mod 10)', same, `${r.labels?.length} labels`);
  record('builtinPoints: mapped without an upload (timings.generate; the heap grew < n × 768 × 4)',
         r.timings.generate >= 0 && r.timings.upload === undefined && r.wasmMemoryBytes - before < builtinCase.n * 768 * 4,
         `generated in ${r.timings.generate?.toFixed(2)} s, heap +${r.wasmMemoryBytes - before}`);
  return { ...builtinCase, embedding: Array.from(r.embedding) };
}
