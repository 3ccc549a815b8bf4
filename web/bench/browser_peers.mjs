// The browser peers benchmark: what a web developer would use instead of surfgrad to map
// embeddings in the page, run in headless Debian Chromium on MNIST (the digits-sized first 1,797
// points and all 10,000), each timed in the page, each map scored by the native CLI
// (`surfgrad eval`: kNN recall@10, 10-NN accuracy, trustworthiness).
//
//   node web/bench/browser_peers.mjs [--out DIR] [--surfgrad PATH/TO/CLI] [--sizes 1797,10000]
//        [--tools umap-js,...] [--tsne-10k-limit SECONDS] [--no-surfgrad-js] [--keep]
//
// Tools: umap-js (fit), umap-js-steps (initializeFit + step() in 10 ms slices, yielding between),
// umap-js-worker (fit in a Web Worker), embedding-atlas (its Rust/wasm UMAP, CPU, on the main
// thread), embedding-atlas-gpu (the same with gpu: true), embedding-atlas-worker (CPU, in a worker),
// tsne-js (exact t-SNE; at 10k it runs last, in its own page, and is stopped after
// --tsne-10k-limit seconds, 600 by default), surfgrad-umap and surfgrad-tsne (only when
// web/package/surfgrad.js exists: the page is opened with ?surfgrad=1; --no-surfgrad-js skips).
// --keep keeps DIR/results.json's other runs (tool, n) and replaces those run now.
// Writes DIR/results.json, DIR/<tool>-<n>.npy and the inputs it scores against
// (DIR/mnist-<n>.npy, f32 n x 784 in [0, 1], and DIR/labels-<n>.npy), and prints a table.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import os from 'node:os';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { serve } from '../tools/serve.mjs';
import { launch, chromiumPath } from '../tools/chromium.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const webRoot = path.resolve(here, '..');
const repoRoot = path.resolve(webRoot, '..');
const dataDir = path.resolve(repoRoot, '..', 'shared', 'data', 'mnist10k');

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : fallback;
}
const outDir = path.resolve(option('--out', path.join(here, 'out')));
const cli = path.resolve(option('--surfgrad', path.join(repoRoot, 'build', 'surfgrad')));
const sizes = option('--sizes', '1797,10000').split(',').map(Number);
const tsneLimit = Number(option('--tsne-10k-limit', '600'));
const runLimit = Number(option('--run-limit', '1200'));
const surfgradJs = path.join(webRoot, 'package', 'surfgrad.js');
const withSurfgrad = fs.existsSync(surfgradJs) && !process.argv.includes('--no-surfgrad-js');
const defaultTools = ['umap-js', 'umap-js-steps', 'umap-js-worker', 'embedding-atlas', 'embedding-atlas-gpu',
                      'embedding-atlas-worker', 'tsne-js',
                      ...(withSurfgrad ? ['surfgrad-umap', 'surfgrad-tsne'] : [])];
const toolList = option('--tools', defaultTools.join(',')).split(',');

if (!fs.existsSync(cli)) {
  console.error(`no native CLI at ${cli}: build it (bash scripts/build.sh) or pass --surfgrad PATH`);
  process.exit(2);
}
fs.mkdirSync(outDir, { recursive: true });

// .npy v1.0 writer: little-endian f4 / i4, C order.
function writeNpy(file, typed, shape) {
  const descr = typed instanceof Float32Array ? '<f4' : typed instanceof Int32Array ? '<i4' : null;
  if (!descr) throw new Error('writeNpy: Float32Array or Int32Array');
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1; head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'),
                                       Buffer.from(typed.buffer, typed.byteOffset, typed.byteLength)]));
}

function readIdx(file) {
  const b = zlib.gunzipSync(fs.readFileSync(file));
  const ndim = b.readUInt32BE(0) & 0xff;
  const dims = Array.from({ length: ndim }, (_, i) => b.readUInt32BE(4 + 4 * i));
  return { dims, data: b.subarray(4 + 4 * ndim) };
}

// The inputs the maps are scored against: the same rows the page maps (uint8 / 255 as f32).
const images = readIdx(path.join(dataDir, 't10k-images-idx3-ubyte.gz'));
const labels = readIdx(path.join(dataDir, 't10k-labels-idx1-ubyte.gz'));
const D = images.dims[1] * images.dims[2];
for (const n of sizes) {
  const x = new Float32Array(n * D);
  for (let i = 0; i < n * D; i++) x[i] = images.data[i] / 255;
  writeNpy(path.join(outDir, `mnist-${n}.npy`), x, [n, D]);
  writeNpy(path.join(outDir, `labels-${n}.npy`), Int32Array.from(labels.data.subarray(0, n)), [n]);
}

function evaluate(npy, n) {
  const out = execFileSync(cli, ['eval', npy, '--input', path.join(outDir, `mnist-${n}.npy`),
                                 '--labels', path.join(outDir, `labels-${n}.npy`)], { encoding: 'utf8' });
  const value = (name) => { const m = out.match(new RegExp(name + '\\s+([\\d.]+)')); return m ? Number(m[1]) : null; };
  return { knn_recall_10: value('kNN recall@10'), knn_accuracy_10: value('10-NN accuracy'),
           trustworthiness_10: value('trustworthiness'), kl_divergence_sample: value('KL divergence') };
}

await esbuild.build({ entryPoints: [path.join(here, 'peers.js'), path.join(here, 'peers-worker.js')], bundle: true,
                      format: 'esm', outdir: path.join(here, 'dist'), logLevel: 'warning' });
const server = await serve({ port: 0, quiet: true });
const pageUrl = `${server.url}/bench/peers.html${withSurfgrad ? '?surfgrad=1' : ''}`;

let browser = await launch();
async function freshPage() {
  // the browser can go away between runs (on a shared machine, another job's clean-up): relaunch once
  if (!browser.isConnected()) { console.log('   (browser gone: relaunching)'); browser = await launch(); }
  const page = await browser.newPage();
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') console.log('[page]', m.text()); });
  page.on('pageerror', (e) => console.log('[page] uncaught:', e.message));
  await page.goto(pageUrl);
  await page.waitForFunction(() => window.peers !== undefined);
  return page;
}

const first = await freshPage();
const env = {
  date: new Date().toISOString(),
  chromium: browser.version(),
  chromiumPath,
  userAgent: await first.evaluate(() => navigator.userAgent),
  adapter: await first.evaluate(() => window.peers.adapterInfo()),
  mnist: await first.evaluate(() => window.peers.loadMnist()),
  host: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memGiB: Math.round(os.totalmem() / 2 ** 30) },
  node: process.version,
  packages: Object.fromEntries(['umap-js', 'tsne-js', 'embedding-atlas', 'playwright-core', 'esbuild'].map((p) =>
    [p, JSON.parse(fs.readFileSync(path.join(webRoot, 'node_modules', p, 'package.json'), 'utf8')).version])),
  surfgradPackage: withSurfgrad ? surfgradJs : null,
  command: 'node ' + process.argv.slice(1).map((a) => path.relative(process.cwd(), a) || a).join(' '),
};
await first.close();
console.log(`Chromium ${env.chromium}; WebGPU adapter: ${JSON.stringify({ vendor: env.adapter.vendor, architecture: env.adapter.architecture, description: env.adapter.description })}`);

const plan = [];
for (const n of sizes) for (const tool of toolList) {
  if (tool === 'tsne-js' && n > 2000) continue;
  plan.push([tool, n, runLimit]);
}
if (toolList.includes('tsne-js')) for (const n of sizes) if (n > 2000) plan.push(['tsne-js', n, tsneLimit]);

// --keep: start from DIR/results.json's runs, replacing only the (tool, n) pairs run now.
const results = [];
const planned = (r) => plan.some(([t, k]) => t === r.tool && k === r.n);
function save() {
  fs.writeFileSync(path.join(outDir, 'results.json'), JSON.stringify({ env, results }, null, 1));
}

// One run in a fresh page, stopped after `limit` seconds (then the browser is restarted: a page
// busy in one long synchronous task cannot be interrupted from inside).
async function runOne(tool, n, limit) {
  const page = await freshPage();
  let timer;
  const timeout = new Promise((done) => { timer = setTimeout(() => done({ timedOut: true }), limit * 1000); });
  const t0 = Date.now();
  const r = await Promise.race([page.evaluate(([t, k]) => window.peers.run(t, k, { seed: 0 }), [tool, n])
                                  .catch((e) => ({ error: String(e.message || e).split('\n')[0] })), timeout]);
  clearTimeout(timer);
  if (r.timedOut) {
    await browser.close().catch(() => {});
    browser = await launch();
    return { tool, n, did_not_finish: `stopped after ${limit} s`, seconds: (Date.now() - t0) / 1000 };
  }
  await page.close();
  if (r.error || r.skipped) return { tool, n, ...r };
  const npy = path.join(outDir, `${tool}-${n}.npy`);
  const emb = Float32Array.from(r.embedding);
  delete r.embedding;
  const finite = emb.every(Number.isFinite);
  writeNpy(npy, emb, [n, 2]);
  return { ...r, map: path.relative(outDir, npy), finite, ...(finite ? evaluate(npy, n) : {}) };
}

if (process.argv.includes('--keep') && fs.existsSync(path.join(outDir, 'results.json'))) {
  const old = JSON.parse(fs.readFileSync(path.join(outDir, 'results.json'), 'utf8'));
  for (const r of old.results) if (!planned(r)) results.push(r);
  env.earlierCommands = [...(old.env.earlierCommands || []), old.env.command];
}
for (const [tool, n, limit] of plan) {
  console.log(`-- ${tool} n=${n} ...`);
  // the host's 1-minute load average before and after: other work on a shared machine shows here
  const loadBefore = os.loadavg()[0];
  const r = { ...(await runOne(tool, n, limit)), at: new Date().toISOString(),
              load1: [Number(loadBefore.toFixed(2)), Number(os.loadavg()[0].toFixed(2))] };
  results.push(r);
  save();
  console.log(`   ${JSON.stringify(r)}`);
}
await browser.close();
await server.close();

const rank = (t) => { const i = defaultTools.indexOf(t); return i < 0 ? 99 : i; };
results.sort((a, b) => a.n - b.n || rank(a.tool) - rank(b.tool));
save();
const f = (v, d) => (v == null ? '-' : typeof v === 'number' ? v.toFixed(d) : String(v));
const lines = ['| tool | n | seconds | kNN recall@10 | 10-NN accuracy | trustworthiness | longest frame gap (ms) | long tasks |',
               '|---|---:|---:|---:|---:|---:|---:|---:|'];
for (const r of results) {
  if (r.skipped || r.error || r.did_not_finish) {
    lines.push(`| ${r.tool} | ${r.n} | ${r.did_not_finish ? '> ' + f(r.seconds, 0) + ' (did not finish)' : '-'} | ${r.skipped || r.error || ''} | | | | |`);
    continue;
  }
  lines.push(`| ${r.tool} | ${r.n} | ${f(r.seconds, 2)} | ${f(r.knn_recall_10, 4)} | ${f(r.knn_accuracy_10, 4)} | ` +
             `${f(r.trustworthiness_10, 4)} | ${r.page.maxFrameGapMs} | ${r.page.longTasks} |`);
}
console.log(lines.join('\n'));
fs.writeFileSync(path.join(outDir, 'table.md'), lines.join('\n') + '\n');
console.log(`wrote ${path.join(outDir, 'results.json')}`);
