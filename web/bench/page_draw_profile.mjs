// Where the page's thread goes when the map view draws a new layout of N points (not in CI): the
// page (dev mock, no map) is given N points in 21 colours, then a second layout is drawn under
// Chrome's CPU profiler; prints the functions by self time and the longest gap between animation
// frames. Used to find what regl-scatterplot costs at 1M points (web/page/README.md).
// --index: the layout comes with its hover index built off the page's thread (as map_worker.js sends it).
//   node web/bench/page_draw_profile.mjs [--n 1000000] [--index]
import { serve } from '../tools/serve.mjs';
import { launch } from '../tools/chromium.mjs';

const argv = process.argv.slice(2);
const n = Number(argv[argv.indexOf('--n') + 1] || 1e6);
const server = await serve({ port: 0, quiet: true });
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  page.on('pageerror', (e) => console.log('[page] uncaught:', e.message));
  await page.goto(`${server.url}/page/?mock=1`);
  await page.waitForFunction(() => window.surfgradPage?.state === 'idle', null, { timeout: 60000 });
  const layout = (seed) => `(() => {
    let s = ${seed} >>> 0; const r = () => ((s = (s * 1664525 + 1013904223) >>> 0) / 4294967296);
    const n = ${n}, x = new Float32Array(n), y = new Float32Array(n), codes = new Int32Array(n);
    for (let i = 0; i < n; i++) { codes[i] = i % 21; x[i] = r() * 1.8 - 0.9; y[i] = r() * 1.8 - 0.9; }
    return { x, y, codes };
  })()`;
  await page.evaluate(async (src) => {
    const { x, y, codes } = eval(src);
    const names = Array.from({ length: 21 }, (_, i) => `label ${i}`);
    const counts = names.map(() => 0); for (const c of codes) counts[c]++;
    window.surfgradPage.view.setCategories({ codes, names, counts });
    await window.surfgradPage.view.show({ x, y });
  }, layout(1));
  await page.evaluate(async ({ src, index }) => {
    window.__next = eval(src);
    if (!index) return;
    const code = `import { createSpatialIndex } from '${location.origin}/page/dist/spatial_index.js';
      onmessage = async ({ data }) => { const b = await createSpatialIndex(data, false); postMessage(b, [b]); };`;
    const w = new Worker(URL.createObjectURL(new Blob([code], { type: 'text/javascript' })), { type: 'module' });
    window.__next.spatialIndex = await new Promise((ok) => { w.onmessage = (e) => ok(e.data); w.postMessage({ x: window.__next.x, y: window.__next.y }); });
    w.terminate();
  }, { src: layout(2), index: argv.includes('--index') });
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
  await cdp.send('Profiler.start');
  const r = await page.evaluate(async () => {
    let gap = 0, last = performance.now(), raf = 0;
    const tick = (t) => { gap = Math.max(gap, t - last); last = t; raf = requestAnimationFrame(tick); };
    raf = requestAnimationFrame(tick);
    const t0 = performance.now();
    await window.surfgradPage.view.show(window.__next);
    const draw = performance.now() - t0;
    // (the frames after it too: the first render of the new points, the GPU's copy of them)
    await new Promise((ok) => setTimeout(ok, 1500));
    cancelAnimationFrame(raf);
    return { draw, gap };
  });
  const { profile } = await cdp.send('Profiler.stop');
  const self = new Map();
  const dt = profile.timeDeltas, byId = new Map(profile.nodes.map((nd) => [nd.id, nd]));
  profile.samples.forEach((id, i) => {
    const f = byId.get(id).callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + (dt[i] ?? 0) / 1000);
  });
  console.log(`${n.toLocaleString('en-US')} points: a new layout drawn in ${r.draw.toFixed(0)} ms; longest gap between animation frames ${r.gap.toFixed(0)} ms`);
  for (const [k, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 18)) console.log(`  ${ms.toFixed(0).padStart(6)} ms  ${k}`);
} finally {
  await browser.close();
  await server.close();
}
