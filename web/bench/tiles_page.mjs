// Times the map page on a tiled map (not in CI): opens ?tiles= for DIR (written by
// `surfgrad map … --tiles DIR` or `surfgrad_io_bench tiles 10000000 DIR`), reports the first view
// (manifest + root drawn), then zooms ×4, ×16 and ×64 into one spot (window.__tiles.zoomTo) and
// reports each zoom's tiles, points and time until every wanted tile is fetched, decoded and drawn,
// with the page's longest task meanwhile (a long task holds every frame: tile arrivals must not);
// then pans at ×4 across the middle half of the map for --pan seconds, the camera moved every
// animation frame as web/bench/page_run.html does on the GPU, and reports the plot's redraws a
// second, the animation frames a second, the longest frame gap and the longest task.
//
// --profile: Chrome's CPU profile of the page's thread during zoom ×4 (its tile arrivals): the
// functions by self time. On SwiftShader the long tasks are mostly the GPU process rasterising
// hundreds of thousands of points (the page's thread waits for it in a GL call); the profile
// shows what the page's own JavaScript costs.
//
//   node web/bench/tiles_page.mjs DIR [--at 0.3,0.4] [--pan 3] [--shots OUTDIR] [--profile]
import fs from 'node:fs';
import path from 'node:path';
import { serve } from '../tools/serve.mjs';
import { launch } from '../tools/chromium.mjs';

const argv = process.argv.slice(2);
const opt = (name, def) => { const i = argv.indexOf(name); return i >= 0 && i + 1 < argv.length ? argv[i + 1] : def; };
const dir = path.resolve(argv[0] ?? '');
if (!argv[0] || !fs.existsSync(path.join(dir, 'manifest.json'))) {
  console.error('usage: node web/bench/tiles_page.mjs DIR (a folder with manifest.json: surfgrad map … --tiles DIR)');
  process.exit(2);
}
const [ax, ay] = opt('--at', '0.3,0.4').split(',').map(Number);
const shots = opt('--shots', null);
const panSeconds = Number(opt('--pan', 3));

const server = await serve({ port: 0, quiet: true });
const browser = await launch();
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  await context.route((u) => u.pathname.startsWith('/bench-tiles/'), (route) => {
    const f = path.resolve(dir, new URL(route.request().url()).pathname.slice('/bench-tiles/'.length));
    if (f.startsWith(dir + path.sep) && fs.existsSync(f)) route.fulfill({ status: 200, body: fs.readFileSync(f) });
    else route.fulfill({ status: 404, body: 'not found' });
  });
  const page = await context.newPage();
  page.on('pageerror', (e) => console.log('[page] uncaught:', e.message));
  const settled = () => page.waitForFunction(() => { const s = window.__tiles.status(); return s && s.inFlight === 0 && s.drawnPoints === s.points; },
    null, { timeout: 120000, polling: 50 });
  const t0 = Date.now();
  // Long tasks on the page's thread, and the plot's redraws (the points layer's frames, or
  // regl-scatterplot's 'draw' events where the page has no layer).
  await page.addInitScript(() => {
    window.__long = [];
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push(e.duration); }).observe({ type: 'longtask' });
  });
  const longest = () => page.evaluate(() => { const m = Math.max(0, ...window.__long); window.__long.length = 0; return Math.round(m); });
  await page.goto(`${server.url}/page/?tiles=/bench-tiles/`);
  await page.waitForFunction(() => window.__tiles?.status()?.firstViewMs != null || window.surfgradPage?.error, null, { timeout: 120000, polling: 50 });
  const first = await page.evaluate(() => window.__tiles.status());
  console.log(`first view: ${first.firstViewMs.toFixed(0)} ms after opening (${Date.now() - t0} ms from navigation); ${first.drawnPoints} points, ${first.loaded} / ${first.total} tiles`);
  await settled();
  console.log(`  longest task until settled: ${await longest()} ms`);
  if (shots) await page.screenshot({ path: path.join(shots, 'tiles_first.png') });
  const [x0, y0, x1, y1] = await page.evaluate(() => window.__tiles.manifest().bounds);
  const cx = x0 + (x1 - x0) * ax, cy = y0 + (y1 - y0) * ay;
  const cdp = argv.includes('--profile') ? await page.context().newCDPSession(page) : null;
  for (const f of [4, 16, 64]) {
    const w = (x1 - x0) / f / 2, h = (y1 - y0) / f / 2;
    if (cdp && f === 4) { await cdp.send('Profiler.enable'); await cdp.send('Profiler.setSamplingInterval', { interval: 200 }); await cdp.send('Profiler.start'); }
    const t = Date.now();
    await page.evaluate((b) => window.__tiles.zoomTo(...b), [cx - w, cy - h, cx + w, cy + h]);
    await page.waitForTimeout(200); // (the view event's debounce)
    await settled();
    const s = await page.evaluate(() => window.__tiles.status());
    console.log(`zoom ×${f}: ${Date.now() - t} ms; ${s.drawnTiles} tiles drawn (${s.loaded} loaded, depth ≤ ${s.maxDepth}), ${s.drawnPoints} points; longest task ${await longest()} ms`);
    if (cdp && f === 4) {
      const { profile } = await cdp.send('Profiler.stop');
      const self = new Map(), byId = new Map(profile.nodes.map((nd) => [nd.id, nd]));
      profile.samples.forEach((id, i) => {
        const c = byId.get(id).callFrame, key = `${c.functionName || '(anonymous)'} ${c.url.split('/').pop()}:${c.lineNumber + 1}`;
        self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
      });
      const js = [...self].filter(([k]) => !/^\((idle|program)\)/.test(k)).reduce((a, [, ms]) => a + ms, 0);
      console.log(`  zoom ×4 profile: ${js.toFixed(0)} ms of the page's thread outside (idle) and (program); by self time:`);
      for (const [k, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 10)) console.log(`  ${ms.toFixed(0).padStart(6)} ms  ${k}`);
    }
    if (shots) await page.screenshot({ path: path.join(shots, `tiles_zoom${f}.png`) });
  }
  // The pan: zoomTo every animation frame (page_run.html's tiles mode).
  const pan = await page.evaluate(async ([x0, y0, x1, y1, seconds]) => {
    const v = window.surfgradPage.view, w = x1 - x0, h = y1 - y0, zw = w / 4, zh = h / 4;
    let draws = 0;
    if (v.onFrame !== undefined) v.onFrame = () => { draws++; }; else v.plot.subscribe('draw', () => { draws++; });
    window.__tiles.zoomTo(x0 + w / 4 - zw / 2, y0 + h / 2 - zh / 2, x0 + w / 4 + zw / 2, y0 + h / 2 + zh / 2);
    await new Promise((ok) => setTimeout(ok, 1500));
    window.__long.length = 0;
    const d0 = draws, s0 = performance.now();
    let frames = 0, last = s0, gap = 0;
    await new Promise((done) => {
      const step = (t) => {
        frames++; gap = Math.max(gap, t - last); last = t;
        const u = Math.min(1, (t - s0) / (seconds * 1000)), cx = x0 + w * (0.25 + 0.5 * u), cy = y0 + h / 2;
        window.__tiles.zoomTo(cx - zw / 2, cy - zh / 2, cx + zw / 2, cy + zh / 2);
        if (u < 1) requestAnimationFrame(step); else done();
      };
      requestAnimationFrame(step);
    });
    const el = (performance.now() - s0) / 1000;
    return { fps: (draws - d0) / el, raf: frames / el, gap, long: Math.max(0, ...window.__long), s: window.__tiles.status() };
  }, [x0, y0, x1, y1, panSeconds]);
  console.log(`pan ×4 for ${panSeconds} s: plot redraws ${pan.fps.toFixed(1)}/s, animation frames ${pan.raf.toFixed(1)}/s, longest frame gap ${pan.gap.toFixed(0)} ms, `
    + `longest task ${pan.long.toFixed(0)} ms; ${pan.s.drawnTiles} tiles drawn, ${pan.s.drawnPoints} points, ${pan.s.loaded} loaded`);
} finally {
  await browser.close();
  await server.close();
}
