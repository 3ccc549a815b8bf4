// The map page's screenshot test: serves web/, opens the page in headless Chromium (WebGPU on),
// maps a small data set to completion, saves a screenshot and checks that it shows a drawn map:
// within the plot area (the legend masked out) many non-background pixels in at least k of the
// label colours. Exit 0 when it does, 1 (with the reasons) when it does not.
//
//   node web/tests/page_screenshot.mjs [--out DIR] [--mock] [--params QUERY] [--min-colours K]
//                                     [--min-pixels P] [--timeout SECONDS] [--max-frame-gap MS]
//
// --mock     use the page's dev mock (web/page/dev_mock_surfgrad.js) instead of the real package
//            web/package/surfgrad.js (the default: without the package the test fails).
// --min-colours K   distinct label colours the map must show (default 5; 1 for unlabelled data).
// --params   the page's query string, default "data=mnist10k&n=2000&method=umap&run=1".
//            `--params ""` opens the page with no data: the check must fail (a blank canvas).
// It also fails when no intermediate layout was drawn, or when the page stopped drawing frames for
// longer than --max-frame-gap (default 1000 ms) while the map ran (the worker must keep it responsive).
// Needs `node web/page/build.mjs` first (the page's bundle, web/page/dist/).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '../tools/serve.mjs';
import { launch } from '../tools/chromium.mjs';

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const opt = (name, def) => { const i = argv.indexOf(name); return i >= 0 && i + 1 < argv.length ? argv[i + 1] : def; };
const outDir = path.resolve(opt('--out', 'build/web-screenshots'));
const mock = flag('--mock');
const query = opt('--params', 'data=mnist10k&n=2000&method=umap&run=1');
const minColours = Number(opt('--min-colours', 5));
const minPixels = Number(opt('--min-pixels', 2000));
const minPerColour = 40;
const timeoutS = Number(opt('--timeout', 300));
const maxFrameGap = Number(opt('--max-frame-gap', 1000));

const here = path.dirname(fileURLToPath(import.meta.url));
if (!fs.existsSync(path.join(here, '..', 'page', 'dist', 'main.js'))) {
  console.error('page_screenshot: FAIL: web/page/dist/main.js is missing; run `node web/page/build.mjs` first');
  process.exit(1);
}
fs.mkdirSync(outDir, { recursive: true });

const failures = [];
const server = await serve({ port: 0, quiet: true });
// Headless, WebGL (ANGLE) and WebGPU both run on SwiftShader.
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') console.log('[page]', m.text()); });
  page.on('pageerror', (e) => console.log('[page] uncaught:', e.message));
  // The page must stay responsive while the worker maps: record the longest gap between animation
  // frames while the page is running.
  await page.addInitScript(() => {
    window.__frameGap = { max: 0, frames: 0 };
    let last = performance.now();
    const tick = (t) => {
      if (window.surfgradPage?.state === 'running') {
        window.__frameGap.max = Math.max(window.__frameGap.max, t - last);
        window.__frameGap.frames++;
      }
      last = t;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  const q = new URLSearchParams(query);
  if (mock) q.set('mock', '1');
  const url = `${server.url}/page/?${q}`;
  console.log(`page_screenshot: ${url} (${mock ? 'mock package' : 'real package'})`);
  await page.goto(url);

  const expectRun = q.get('run') === '1';
  const t0 = Date.now();
  try {
    if (expectRun) {
      await page.waitForFunction(() => ['done', 'error', 'cancelled'].includes(window.surfgradPage?.state)
        && (window.surfgradPage.state !== 'done' || window.surfgradPage.drawn), null, { timeout: timeoutS * 1000, polling: 250 });
    } else {
      await page.waitForFunction(() => window.surfgradPage && !['starting', 'loading'].includes(window.surfgradPage.state),
        null, { timeout: timeoutS * 1000, polling: 250 });
    }
  } catch {
    failures.push(`the page did not settle within ${timeoutS} s`);
  }
  await page.evaluate(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok))));
  await page.waitForTimeout(300);
  const st = await page.evaluate(() => {
    const p = window.surfgradPage;
    const rect = (el) => { if (!el || el.hidden) return null; const r = el.getBoundingClientRect(); return { x: r.x, y: r.y, width: r.width, height: r.height }; };
    return {
      state: p?.state, error: p?.error, device: document.getElementById('device')?.textContent,
      frameGap: window.__frameGap, n: p?.data?.n, result: p?.result ? { n: p.result.n, timings: p.result.timings } : null, draws: p?.draws,
      colours: p ? p.colours() : [], plot: p ? p.plotRect() : null,
      // The page's own overlays on the plot (legend swatches, buttons, the empty-state text) are
      // not part of the map: mask them out.
      masks: ['legend', 'reset-view', 'tooltip', 'empty'].map((id) => rect(document.getElementById(id))).filter(Boolean),
    };
  });
  console.log(`page_screenshot: state ${st.state} after ${((Date.now() - t0) / 1000).toFixed(1)} s; device: ${st.device}`);
  if (st.result) console.log(`page_screenshot: mapped ${st.result.n} points; ${st.draws} intermediate layouts received; timings ${JSON.stringify(st.result.timings)}`);
  if (st.result) {
    console.log(`page_screenshot: longest frame gap while running ${Math.round(st.frameGap.max)} ms over ${st.frameGap.frames} frames`);
    if (st.draws < 2) failures.push(`no intermediate layouts were drawn (${st.draws})`);
    if (st.frameGap.max > maxFrameGap) failures.push(`the page was unresponsive: a ${Math.round(st.frameGap.max)} ms gap between frames (limit ${maxFrameGap} ms)`);
  }
  if (st.error) failures.push(`the page shows an error: ${st.error.context}: ${st.error.kind ?? ''} ${st.error.message}`);
  if (st.state !== 'done') failures.push(`the map did not complete (page state '${st.state}'${expectRun ? '' : ', no run requested'})`);

  const png = await page.screenshot({ path: path.join(outDir, 'page.png') });
  console.log(`page_screenshot: wrote ${path.join(outDir, 'page.png')}`);

  // Decode the PNG itself (in the browser: no PNG library needed) and count the plot's pixels.
  const check = await page.evaluate(async ({ b64, plot, masks, colours }) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const c = new OffscreenCanvas(img.width, img.height);
    const g = c.getContext('2d', { willReadFrequently: true });
    g.drawImage(img, 0, 0);
    const x0 = Math.ceil(plot.x), y0 = Math.ceil(plot.y);
    const w = Math.floor(plot.width), h = Math.floor(plot.height);
    const px = g.getImageData(x0, y0, w, h).data;
    const hex = (s) => [1, 3, 5].map((i) => parseInt(s.slice(i, i + 2), 16));
    const pal = colours.map(hex);
    // The background: the commonest colour in the plot area.
    const freq = new Map();
    for (let i = 0; i < px.length; i += 4 * 7) { const k = (px[i] << 16) | (px[i + 1] << 8) | px[i + 2]; freq.set(k, (freq.get(k) || 0) + 1); }
    const bgKey = [...freq.entries()].sort((a, b) => b[1] - a[1])[0][0];
    const bg = [bgKey >> 16, (bgKey >> 8) & 255, bgKey & 255];
    const masked = (x, y) => masks.some((m) => x + x0 >= m.x - 2 && x + x0 <= m.x + m.width + 2 && y + y0 >= m.y - 2 && y + y0 <= m.y + m.height + 2);
    const counts = new Array(pal.length).fill(0);
    let nonBg = 0, unmatched = 0;
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) {
      if (masked(x, y)) continue;
      const i = 4 * (y * w + x);
      const p = [px[i], px[i + 1], px[i + 2]];
      const dbg = Math.hypot(p[0] - bg[0], p[1] - bg[1], p[2] - bg[2]);
      if (dbg < 24) continue;
      nonBg++;
      // Points are drawn with some opacity over the background: compare with each colour blended.
      let best = -1, bd = Infinity;
      for (let k = 0; k < pal.length; k++) for (const a of [1, 0.85, 0.7, 0.55]) {
        const q = pal[k].map((v, j) => a * v + (1 - a) * bg[j]);
        const dd = Math.hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]);
        if (dd < bd) { bd = dd; best = k; }
      }
      if (bd < 30) counts[best]++; else unmatched++;
    }
    return { area: w * h, bg, nonBg, unmatched, counts };
  }, { b64: png.toString('base64'), plot: st.plot, masks: st.masks, colours: st.colours });

  const present = check.counts.filter((c) => c >= minPerColour).length;
  const need = minColours;
  console.log(`page_screenshot: plot ${Math.round(st.plot.width)}×${Math.round(st.plot.height)}, background rgb(${check.bg}), `
    + `${check.nonBg} non-background pixels (${check.unmatched} in no label colour); per colour: ${check.counts.join(' ')}`);
  if (check.nonBg < minPixels) failures.push(`the plot looks blank: ${check.nonBg} non-background pixels (need ≥ ${minPixels})`);
  if (present < need) failures.push(`only ${present} label colours have ≥ ${minPerColour} pixels (need ≥ ${need}; the page has ${st.colours.length})`);
} catch (e) {
  failures.push(`the test itself failed: ${e.stack || e}`);
} finally {
  await browser.close();
  await server.close();
}

if (failures.length) {
  console.error(`page_screenshot: FAIL\n  - ${failures.join('\n  - ')}`);
  process.exit(1);
}
console.log('page_screenshot: PASS: the screenshot shows a drawn map');
