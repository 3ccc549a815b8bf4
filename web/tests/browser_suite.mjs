// The browser suite (run by scripts/test_web.sh): the real package in headless Chromium on its
// WebGPU adapter (SwiftShader here). web/tests/suite.js checks ops against float64 references,
// gradients against finite differences, the tile examples (fused against float64 and unfused),
// the moons MLP trained from JavaScript and bad input; it returns t-SNE and UMAP maps of MNIST 10k, which this driver scores with the native
// `surfgrad eval` beside native maps of the same options (`surfgrad map`): every quality measure
// must be within 0.01 of the native map's.
// It also maps builtinPoints(n) in the page and `surfgrad map --points n` natively, which must
// agree to 1e-3 of the map's scale (points_suite.js's builtinCase: one t-SNE iteration, so the map
// is the points' principal components: the same points or not).
//   node web/tests/browser_suite.mjs [--surfgrad build/surfgrad] [--out DIR] [--no-mnist] [--only GROUP,...]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch, openPage } from '../tools/chromium.mjs';
import { serve } from '../tools/serve.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const surfgrad = path.resolve(option('--surfgrad', path.join(repo, 'build', 'surfgrad')));
const out = path.resolve(option('--out', path.join(repo, 'build-web', 'browser-suite')));
const mnist = !args.includes('--no-mnist');
const only = option('--only', null)?.split(',') ?? null;  // groups of suite.js, e.g. --only points,'built-in points'
const data = path.resolve(repo, '..', 'shared', 'data', 'mnist10k');
const images = path.join(data, 't10k-images-idx3-ubyte.gz');
const labels = path.join(data, 't10k-labels-idx1-ubyte.gz');
const tolerance = 0.01;
fs.mkdirSync(out, { recursive: true });

function writeNpy(file, values, shape) {
  const header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}), }`;
  const text = header.padEnd(Math.ceil((header.length + 11) / 64) * 64 - 11) + '\n';
  const prefix = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, text.length & 0xff, text.length >> 8]);
  fs.writeFileSync(file, Buffer.concat([prefix, Buffer.from(text, 'latin1'), Buffer.from(Float32Array.from(values).buffer)]));
}

function evaluate(map) {
  const text = execFileSync(surfgrad, ['eval', map, '--input', images, '--labels', labels], { encoding: 'utf8' });
  const value = (name) => Number(text.match(new RegExp(`${name}\\s+([\\d.]+)`))[1]);
  return { 'kNN recall@10': value('kNN recall@10'), '10-NN accuracy': value('10-NN accuracy'),
           trustworthiness: value('trustworthiness') };
}

const failures = [];
const server = await serve({ port: 0, quiet: true });
const browser = await launch();
let report;
try {
  const page = await openPage(browser, `${server.url}/tests/suite.html`, { prefix: '[suite]' });
  await page.waitForFunction(() => window.suiteReady, null, { timeout: 60000 });
  const started = Date.now();
  report = await page.evaluate(([withMnist, groups]) => window.runSuite({ mnist: withMnist, only: groups }), [mnist, only]);
  console.log(`browser suite on ${report.info.adapter} (${report.info.implementation}), ${((Date.now() - started) / 1000).toFixed(1)} s`);
  for (const r of report.results) {
    console.log(`${r.ok ? 'ok  ' : 'FAIL'} ${r.name}${r.detail && (!r.ok || r.detail.length < 120) ? `: ${r.detail}` : ''}`);
    if (!r.ok) failures.push(r.name);
  }
  const tiles = Object.entries(report.tileTimings || {}).map(([name, t]) => `${name} ${t.seconds.toFixed(1)} s`);
  if (tiles.length) console.log(`tile examples (each fused and unfused, kernels compiled included): ${tiles.join(', ')}`);
} finally {
  await browser.close();
  await server.close();
}

function readNpyF32(file) {
  const bytes = fs.readFileSync(file), headerLength = bytes.readUInt16LE(8);
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset + 10 + headerLength, bytes.byteOffset + bytes.length));
}

if (report.builtin) {
  const { n, method, cli, embedding } = report.builtin;
  const base = path.join(out, `native_builtin_${method}`);
  execFileSync(surfgrad, ['map', '--points', String(n), '--method', method, ...cli, '-o', base], { stdio: ['ignore', 'pipe', 'pipe'] });
  const native = readNpyF32(`${base}.npy`);
  const scale = Math.max(...native.map(Math.abs));
  const worst = Math.max(...embedding.map((v, i) => Math.abs(v - native[i])));
  const ok = native.length === embedding.length && worst <= 1e-3 * scale;
  console.log(`${ok ? 'ok  ' : 'FAIL'} builtinPoints(${n}) ${method} in the page against \`surfgrad map --points ${n}\`: ` +
              `max |difference| ${worst.toExponential(2)}, scale ${scale.toExponential(2)}`);
  if (!ok) failures.push(`builtinPoints(${n}) against native`);
  report.builtin = { n, method, maxDifference: worst, scale };
}

if (mnist && report.maps) {
  for (const [method, map] of Object.entries(report.maps)) {
    const browserMap = path.join(out, `browser_${method}.npy`);
    writeNpy(browserMap, map.embedding, [map.embedding.length / 2, 2]);
    const nativeBase = path.join(out, `native_${method}`);
    const t0 = Date.now();
    // The options of suite.js's mnistOptions.
    const extra = method === 'tsne' ? ['--iterations', '500'] : [];
    try {
      execFileSync(surfgrad, ['map', images, '--method', method, '--pca', '50', '--seed', '1', ...extra, '-o', nativeBase],
                   { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
    } catch (e) {
      console.log(`native surfgrad map failed:\n${e.stdout}${e.stderr}`);
      throw e;
    }
    const nativeSeconds = (Date.now() - t0) / 1000;
    const inBrowser = evaluate(browserMap), native = evaluate(`${nativeBase}.npy`);
    console.log(`MNIST 10k ${method}: browser ${map.seconds.toFixed(1)} s, native ${nativeSeconds.toFixed(1)} s (CLI, with loading)`);
    for (const measure of Object.keys(native)) {
      const ok = Math.abs(inBrowser[measure] - native[measure]) <= tolerance;
      console.log(`${ok ? 'ok  ' : 'FAIL'} MNIST 10k ${method} ${measure}: browser ${inBrowser[measure].toFixed(4)}, native ${native[measure].toFixed(4)}`);
      if (!ok) failures.push(`MNIST ${method} ${measure}`);
    }
    report.maps[method] = { seconds: map.seconds, timings: map.timings, nativeSeconds, browser: inBrowser, native };
  }
}
fs.writeFileSync(path.join(out, 'report.json'), JSON.stringify({ ...report, failures }, null, 1));
if (failures.length) {
  console.log(`browser suite: ${failures.length} failed: ${failures.join('; ')}`);
  process.exit(1);
}
console.log(`browser suite: all ${report.results.length} checks passed${mnist ? ' and the MNIST maps match native' : ''}`);
