// The map page's drawing at scale (a measurement, not in CI): N random points in 20 clusters (+
// "other") handed to the page's view as a layout would be, then frame times while it zooms (wheel)
// and pans (drag), the main thread's long tasks while a new layout of all N points comes in, and
// hover (the tooltip's index and label: the k-d tree the worker built, else a scan near the mouse).
//
//   node web/tests/page_frames.mjs [--n 1000000] [--frames 60] [--out DIR]
//
// Headless Chromium draws WebGL on SwiftShader here (a CPU rasteriser), so its frame times are an
// upper bound; the page's own per-frame work is O(1) (the points live in GPU buffers: points_layer.js).
import fs from 'node:fs';
import path from 'node:path';
import { serve } from '../tools/serve.mjs';
import { launch } from '../tools/chromium.mjs';

const argv = process.argv.slice(2);
const opt = (name, def) => { const i = argv.indexOf(name); return i >= 0 && i + 1 < argv.length ? argv[i + 1] : def; };
const n = Number(opt('--n', 1e6));
const frames = Number(opt('--frames', 60));
const outDir = path.resolve(opt('--out', 'build/web-frames'));
fs.mkdirSync(outDir, { recursive: true });

const server = await serve({ port: 0, quiet: true });
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  page.on('pageerror', (e) => console.log('[page] uncaught:', e.message));
  await page.goto(`${server.url}/page/?mock=1`);
  await page.waitForFunction(() => window.surfgradPage?.state === 'idle', null, { timeout: 60000 });
  // Long tasks on the page's thread from here on.
  await page.evaluate(() => {
    window.__long = [];
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push(e.duration); }).observe({ type: 'longtask', buffered: false });
  });
  const layout = (seed) => `(() => {
    let s = ${seed} >>> 0; const r = () => ((s = (s * 1664525 + 1013904223) >>> 0) / 4294967296);
    const n = ${n}, x = new Float32Array(n), y = new Float32Array(n), codes = new Int32Array(n);
    const cx = Array.from({ length: 21 }, () => r() * 1.4 - 0.7), cy = Array.from({ length: 21 }, () => r() * 1.4 - 0.7);
    for (let i = 0; i < n; i++) {
      // A point's cluster by its index alone (the same in every layout), its place by the seed.
      const h = (Math.imul(i ^ 0x9e3779b9, 0x85ebca6b) >>> 0) / 4294967296;
      const c = Math.min(20, Math.floor(-Math.log(1 - h) * 6));
      const a = r() * 6.283, d = 0.12 * Math.sqrt(-2 * Math.log(1 - r()));
      codes[i] = c; x[i] = cx[c] + d * Math.cos(a); y[i] = cy[c] + d * Math.sin(a);
    }
    return { x, y, codes };
  })()`;
  const first = await page.evaluate(async (src) => {
    const { x, y, codes } = eval(src);
    const names = Array.from({ length: 20 }, (_, i) => `label ${i}`).concat(['other (123 values)']);
    const counts = names.map(() => 0); for (const c of codes) counts[c]++;
    const v = window.surfgradPage.view;
    window.__long.length = 0;
    const t0 = performance.now();
    v.setCategories({ codes, names, counts });
    const t1 = performance.now();
    await v.show({ x, y });
    const t2 = performance.now();
    document.getElementById('empty').hidden = true;
    return { categories: t1 - t0, draw: t2 - t1, long: [...window.__long] };
  }, layout(1));
  console.log(`page_frames: ${n.toLocaleString('en-US')} points: colour codes set in ${first.categories.toFixed(0)} ms, `
    + `first draw ${first.draw.toFixed(0)} ms`);

  // A second layout (as the worker posts one): how long the page's thread is held.
  // (Each layout is made in a task of its own first: making 1M points here takes ~0.5 s, which is
  // not the page's drawing; the long tasks are collected from a quiet moment after it.)
  const quiet = () => page.evaluate(() => new Promise((ok) => setTimeout(() => { window.__long.length = 0; ok(); }, 300)));
  await page.evaluate((src) => { window.__next = eval(src); }, layout(2));
  await quiet();
  const second = await page.evaluate(async () => {
    const { x, y } = window.__next;
    let gap = 0, last = performance.now(), raf = 0;
    const tick = (t) => { gap = Math.max(gap, t - last); last = t; raf = requestAnimationFrame(tick); };
    raf = requestAnimationFrame(tick);
    const t0 = performance.now();
    await window.surfgradPage.view.show({ x, y });
    const draw = performance.now() - t0;
    await new Promise((ok) => setTimeout(ok, 1000)); // (and the frames that draw it)
    cancelAnimationFrame(raf);
    return { draw, gap, long: [...window.__long] };
  });
  console.log(`page_frames: a new layout of all points drawn in ${second.draw.toFixed(0)} ms; longest gap between animation frames meanwhile `
    + `${second.gap.toFixed(0)} ms; long tasks ${second.long.map((d) => d.toFixed(0)).join(', ') || 'none reported'}`);

  // The same with the layout's hover index built off the page's thread, as the map worker does for
  // a final layout (map_worker.js postIndex; here in a worker of its own, not timed).
  await page.evaluate(async (src) => {
    const { x, y } = eval(src);
    const code = `import { createSpatialIndex } from '${location.origin}/page/dist/spatial_index.js';
      onmessage = async ({ data }) => { const b = await createSpatialIndex(data, false); postMessage(b, [b]); };`;
    const w = new Worker(URL.createObjectURL(new Blob([code], { type: 'text/javascript' })), { type: 'module' });
    const spatialIndex = await new Promise((ok) => { w.onmessage = (e) => ok(e.data); w.postMessage({ x, y }); });
    w.terminate();
    window.__next = { x, y, spatialIndex };
  }, layout(4));
  await quiet();
  const indexed = await page.evaluate(async () => {
    const { x, y, spatialIndex } = window.__next;
    let gap = 0, last = performance.now(), raf = 0;
    const tick = (t) => { gap = Math.max(gap, t - last); last = t; raf = requestAnimationFrame(tick); };
    raf = requestAnimationFrame(tick);
    const t0 = performance.now();
    window.__indexed = { x, y, spatialIndex }; // (drawn again for the rest: hover then uses this index)
    await window.surfgradPage.view.show(window.__indexed);
    const draw = performance.now() - t0;
    await new Promise((ok) => setTimeout(ok, 1000)); // (and the frames that draw it)
    cancelAnimationFrame(raf);
    return { draw, gap, long: [...window.__long] };
  });
  console.log(`page_frames: a new layout with its index built off the page's thread drawn in ${indexed.draw.toFixed(0)} ms; longest gap `
    + `between animation frames meanwhile ${indexed.gap.toFixed(0)} ms; long tasks ${indexed.long.map((d) => d.toFixed(0)).join(', ') || 'none reported'}`);

  // An intermediate layout as the worker posts one for a map this large: every stride-th point.
  await page.evaluate((src) => {
    const { x, y } = eval(src);
    const stride = Math.max(1, Math.ceil(x.length / 100000));
    const xs = new Float32Array(Math.ceil(x.length / stride)), ys = new Float32Array(xs.length);
    for (let k = 0; k < xs.length; k++) { xs[k] = x[k * stride]; ys[k] = y[k * stride]; }
    window.__next = { xs, ys, stride };
  }, layout(3));
  await quiet();
  const live = await page.evaluate(async () => {
    const { xs, ys, stride } = window.__next;
    let gap = 0, last = performance.now(), raf = 0;
    const tick = (t) => { gap = Math.max(gap, t - last); last = t; raf = requestAnimationFrame(tick); };
    raf = requestAnimationFrame(tick);
    const t0 = performance.now();
    await window.surfgradPage.view.show({ x: xs, y: ys, stride });
    const draw = performance.now() - t0;
    await new Promise((ok) => setTimeout(ok, 1000)); // (and the frames that draw it)
    cancelAnimationFrame(raf);
    const long = [...window.__long];
    await window.surfgradPage.view.show(window.__indexed); // whole again for the rest
    return { draw, gap, stride, m: xs.length, long };
  });
  console.log(`page_frames: an intermediate layout (every ${live.stride}th point: ${live.m.toLocaleString('en-US')}) drawn in ${live.draw.toFixed(0)} ms; `
    + `longest gap between animation frames meanwhile ${live.gap.toFixed(0)} ms; long tasks ${live.long.map((d) => d.toFixed(0)).join(', ') || 'none reported'}`);

  const plot = await page.evaluate(() => window.surfgradPage.plotRect());
  const cx = plot.x + plot.width / 2, cy = plot.y + plot.height / 2;
  // Frames the points layer renders (its draw calls of every batch, the time on the page's thread)
  // while `step` moves the view, and the longest gap between animation frames.
  await page.evaluate(() => {
    window.__draws = [];
    window.surfgradPage.view.onFrame = (ms) => window.__draws.push([performance.now(), ms]);
  });
  const measure = async (what, step) => {
    const start = await page.evaluate(() => {
      window.__draws.length = 0;
      window.__gap = 0;
      let last = performance.now();
      const tick = (t) => { window.__gap = Math.max(window.__gap, t - last); last = t; window.__raf = requestAnimationFrame(tick); };
      window.__raf = requestAnimationFrame(tick);
      return performance.now();
    });
    for (let i = 0; i < frames; i++) await step(i);
    const r = await page.evaluate(() => { cancelAnimationFrame(window.__raf); return { draws: window.__draws.slice(), gap: window.__gap, end: performance.now() }; });
    const ms = r.draws.map((d) => d[1]).sort((a, b) => a - b);
    const q = (p) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))] ?? NaN;
    const fps = (1000 * r.draws.length) / (r.end - start);
    console.log(`page_frames: ${what}: ${r.draws.length} frames drawn in ${((r.end - start) / 1000).toFixed(1)} s (${fps.toFixed(1)} fps); `
      + `a frame's draw median ${q(0.5).toFixed(1)} ms, max ${ms.at(-1)?.toFixed(1)} ms; longest gap between animation frames ${r.gap.toFixed(0)} ms`);
    return { frames: r.draws.length, fps, draw_median_ms: q(0.5), draw_max_ms: ms.at(-1), max_frame_gap_ms: r.gap };
  };
  await page.mouse.move(cx, cy);
  const zoom = await measure('zoom (wheel)', async (i) => { await page.mouse.wheel(0, i < frames / 2 ? -120 : 120); await page.waitForTimeout(16); });
  await page.mouse.move(cx, cy);
  await page.mouse.down();
  const pan = await measure('pan (drag)', async (i) => { await page.mouse.move(cx + 200 * Math.sin(i / 8), cy + 120 * Math.cos(i / 8)); await page.waitForTimeout(16); });
  await page.mouse.up();
  await page.evaluate(() => window.surfgradPage.view.resetView());
  await page.waitForTimeout(500);

  // Hover: move over the points until the tooltip shows an index and a label.
  let hover = null;
  const t0 = Date.now();
  for (let k = 0; k < 200 && !hover; k++) {
    await page.mouse.move(plot.x + plot.width * (0.2 + 0.6 * ((k * 37) % 100) / 100), plot.y + plot.height * (0.2 + 0.6 * ((k * 61) % 100) / 100));
    await page.waitForTimeout(30);
    hover = await page.evaluate(() => { const t = document.getElementById('tooltip'); return t.hidden ? null : t.textContent; });
  }
  console.log(`page_frames: hover: ${hover ? `tooltip '${hover}' after ${Date.now() - t0} ms of moving` : 'no tooltip'}`);
  await page.screenshot({ path: path.join(outDir, `frames_${n}.png`) });
  const row = { n, categories_ms: first.categories, first_draw_ms: first.draw, layout_draw_ms: second.draw,
    layout_frame_gap_ms: second.gap, layout_long_tasks_ms: second.long, indexed_layout: indexed, live_layout: live, zoom, pan, hover };
  fs.writeFileSync(path.join(outDir, `frames_${n}.json`), JSON.stringify(row, null, 1));
  console.log(`page_frames: wrote ${path.join(outDir, `frames_${n}.json`)} and the screenshot`);
} finally {
  await browser.close();
  await server.close();
}
