// The map page opens a tiled map (CI, after page_parquet.mjs; docs/tiles.md): surfgrad writes a UMAP
// of 20,000 built-in points as tiles of at most 2,048 rows (a root, its children, theirs), served
// beside the page; the page opens ?tiles=…, and the test checks the root is drawn (the status line
// says so; a screenshot of the plot has many non-background pixels in several label colours),
// zooms into a corner (window.__tiles.zoomTo) and checks deeper tiles were loaded and more points
// drawn; then a manifest of the wrong format shows its message. Exit 0 when all hold (or when the
// surfgrad given lacks --tiles: a printed skip), 1 with reasons.
//
//   node web/tests/page_tiles.mjs [SURFGRAD (build/surfgrad)] [--out DIR] [--timeout SECONDS]
//
// Needs the page built (node web/page/build.mjs). Cost: the map ~10 s (a cheap UMAP: PCA to 8,
// exact kNN, 50 epochs; the tiles only need a layout) and the page ~10 s on the 2-core CI machine.
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { serve } from '../tools/serve.mjs';
import { launch } from '../tools/chromium.mjs';

const argv = process.argv.slice(2);
const opt = (name, def) => { const i = argv.indexOf(name); return i >= 0 && i + 1 < argv.length ? argv[i + 1] : def; };
const positional = argv.filter((a, i) => !a.startsWith('--') && !(i > 0 && argv[i - 1].startsWith('--')));
const surfgrad = path.resolve(positional[0] ?? 'build/surfgrad');
const outDir = path.resolve(opt('--out', 'build/web-tiles'));
const timeoutS = Number(opt('--timeout', 60));
const tilesDir = path.join(outDir, 'tiles-umap20k');
const badDir = path.join(outDir, 'tiles-bad');

let help = '';
try { help = execFileSync(surfgrad, ['map', '--help'], { encoding: 'utf8' }); } catch (e) { help = `${e.stdout ?? ''}`; }
if (!/--tiles/.test(help)) {
  console.log(`page_tiles: SKIP: ${surfgrad} has no 'map --tiles' (built without Arrow, or missing)`);
  process.exit(0);
}

// ---- the tiles ------------------------------------------------------------------------------------
fs.mkdirSync(outDir, { recursive: true });
const t0 = Date.now();
execFileSync(surfgrad, ['map', '--points', '20000', '--method', 'umap', '--pca', '8', '--knn', 'exact', '--recall-sample', '0',
  '--epochs', '50', '-o', path.join(outDir, 'tiles-umap20k.npy'), '--tiles', tilesDir, '--tile-rows', '2048', '--force'],
{ stdio: ['ignore', 'ignore', 'inherit'] });
const manifest = JSON.parse(fs.readFileSync(path.join(tilesDir, 'manifest.json'), 'utf8'));
console.log(`page_tiles: ${manifest.points} points in ${manifest.tile_count} tiles, depth ${manifest.depth}, in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
fs.mkdirSync(badDir, { recursive: true });
fs.writeFileSync(path.join(badDir, 'manifest.json'), JSON.stringify({ ...manifest, format: 'deepscatter' }));

const failures = [];
const server = await serve({ port: 0, quiet: true });
const browser = await launch();
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error' || process.env.VERBOSE) console.log('[page]', m.text().slice(0, 300)); });
  page.on('pageerror', (e) => console.log('[page] uncaught:', e.message));
  // /test-tiles/… and /bad-tiles/…: the folders above, beside the page; the tiles fetched are counted.
  const fetched = [];
  for (const [prefix, dir] of [['/test-tiles/', tilesDir], ['/bad-tiles/', badDir]]) {
    await context.route((u) => u.pathname.startsWith(prefix), (route) => {
      const rel = new URL(route.request().url()).pathname.slice(prefix.length);
      const f = path.resolve(dir, rel);
      if (f.startsWith(dir + path.sep) && fs.existsSync(f) && fs.statSync(f).isFile()) {
        if (f.endsWith('.feather')) fetched.push(rel);
        route.fulfill({ status: 200, body: fs.readFileSync(f), contentType: f.endsWith('.json') ? 'application/json' : 'application/octet-stream' });
      } else route.fulfill({ status: 404, body: 'not found' });
    });
  }
  const status = () => page.evaluate(() => ({ s: window.__tiles?.status(), text: document.getElementById('phase-detail').textContent,
    error: window.surfgradPage.error }));

  const tOpen = Date.now();
  // tileDensity: at the first view 20,000 points are sparse enough that the page would fetch them
  // all; a lower threshold makes it start from the root alone, as a map of millions does.
  await page.goto(`${server.url}/page/?tiles=/test-tiles/&tileDensity=0.002`);
  await page.waitForFunction(() => window.__tiles?.status()?.firstViewMs != null || window.surfgradPage?.error,
    null, { timeout: timeoutS * 1000, polling: 100 });
  // Let the first view's other tiles come in (they are few here), then look.
  await page.waitForFunction(() => window.__tiles.status().inFlight === 0, null, { timeout: timeoutS * 1000, polling: 100 }).catch(() => {});
  await page.waitForTimeout(500);
  const first = await status();
  console.log(`page_tiles: opened in ${((Date.now() - tOpen) / 1000).toFixed(1)} s: ${first.text}`);
  if (first.error) failures.push(`the page shows an error: ${first.error.context}: ${first.error.message}`);
  if (!first.s || first.s.firstViewMs == null) failures.push('the root tile was not drawn (no first view time)');
  if (!/tiles loaded .* points drawn .*first view in/.test(first.text)) failures.push(`the status line does not say tiles loaded, points drawn and first view: '${first.text}'`);
  if (first.s && first.s.drawnPoints < manifest.tiles[0].rows) failures.push(`only ${first.s.drawnPoints} points drawn (the root alone has ${manifest.tiles[0].rows})`);

  // The screenshot: many non-background pixels in the plot, in several label colours.
  const shot = path.join(outDir, 'page_tiles.png');
  const png = await page.screenshot({ path: shot });
  const plot = await page.evaluate(() => window.surfgradPage.plotRect());
  // (The legend, over the plot's corner, is not counted.)
  const count = (png) => page.evaluate(async ({ b64, plot }) => {
    const lg = document.getElementById('legend').getBoundingClientRect();
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const g = new OffscreenCanvas(img.width, img.height).getContext('2d', { willReadFrequently: true });
    g.drawImage(img, 0, 0);
    const px = g.getImageData(Math.ceil(plot.x), Math.ceil(plot.y), Math.floor(plot.width), Math.floor(plot.height)).data;
    let nonBg = 0;
    const hues = new Set();
    const w = Math.floor(plot.width), x0 = Math.ceil(plot.x), y0 = Math.ceil(plot.y);
    for (let i = 0; i < px.length; i += 4) {
      const X = x0 + ((i / 4) % w), Y = y0 + Math.floor(i / 4 / w);
      if (X >= lg.left && X <= lg.right && Y >= lg.top && Y <= lg.bottom) continue;
      if (px[i] > 235 && px[i + 1] > 235 && px[i + 2] > 235) continue; // the white background
      nonBg++;
      hues.add(`${px[i] >> 5},${px[i + 1] >> 5},${px[i + 2] >> 5}`);
    }
    return { nonBg, hues: hues.size };
  }, { b64: png.toString('base64'), plot });
  const pix = await count(png);
  console.log(`page_tiles: ${shot}: ${pix.nonBg} non-background pixels, ${pix.hues} colour bins`);
  if (pix.nonBg < 5000) failures.push(`the plot looks blank: ${pix.nonBg} non-background pixels (need ≥ 5,000)`);
  if (pix.hues < 6) failures.push(`the plot has ${pix.hues} colour bins: not coloured by label (need ≥ 6)`);

  // Hover over a drawn point: the tooltip names its input row (ix) and label.
  const pos = await page.evaluate(() => { const [x, y] = window.surfgradPage.view.screenPosition(0); const r = window.surfgradPage.plotRect(); return [r.x + x, r.y + y]; });
  await page.mouse.move(pos[0] - 3, pos[1] - 3);
  await page.mouse.move(pos[0], pos[1]);
  const tip = await page.waitForFunction(() => { const t = document.getElementById('tooltip'); return !t.hidden && t.textContent; }, null, { timeout: 10000, polling: 100 })
    .then((h) => h.jsonValue(), () => null);
  console.log(`page_tiles: hover: ${tip}`);
  // (The built-in clusters label row i with i mod 10, so the tile's ix and label must agree.)
  const hm = /^#(\d+)label (\d+)$/.exec(tip ?? '');
  if (!hm || Number(hm[1]) % 10 !== Number(hm[2])) failures.push(`hovering a point shows '${tip}', not its row and label ('#i' 'label i mod 10')`);

  // The label filter: a click on a legend entry leaves that label's points alone (the built-in
  // clusters are ten of about the same size), a second click all of them again.
  await page.mouse.move(plot.x + 2, plot.y + plot.height - 2);
  const legendRow = () => page.locator('#legend .legend-row').nth(3);
  await legendRow().click();
  await page.waitForTimeout(300);
  const only = await count(await page.screenshot());
  await legendRow().click();
  await page.waitForTimeout(300);
  const all = await count(await page.screenshot());
  console.log(`page_tiles: filter to label 3: ${only.nonBg} non-background pixels (all: ${all.nonBg})`);
  if (!(only.nonBg > 0.02 * all.nonBg && only.nonBg < 0.2 * all.nonBg)) failures.push(`filtering to one of 10 labels left ${only.nonBg} of ${all.nonBg} non-background pixels`);

  // Zoom into a corner of the densest quadrant: deeper tiles come, more points are drawn.
  const before = first.s ?? { loaded: 0, drawnPoints: 0, maxDepth: 0 };
  const [x0, y0, x1, y1] = manifest.bounds;
  const deepest = manifest.tiles.filter((t) => Number(t.key.split('/')[0]) === manifest.depth).sort((a, b) => b.rows - a.rows)[0];
  const zb = deepest?.bounds ?? [x0, y0, (x0 + x1) / 2, (y0 + y1) / 2];
  await page.evaluate((b) => window.__tiles.zoomTo(...b), zb);
  await page.waitForFunction((n) => { const s = window.__tiles.status(); return s.inFlight === 0 && s.loaded > n; }, before.loaded,
    { timeout: timeoutS * 1000, polling: 100 }).catch(() => {});
  await page.waitForTimeout(800);
  const zoomed = await status();
  await page.screenshot({ path: path.join(outDir, 'page_tiles_zoomed.png') });
  console.log(`page_tiles: zoomed to tile ${deepest?.key}: ${zoomed.text}; depth ${before.maxDepth} → ${zoomed.s?.maxDepth}; tiles fetched ${fetched.join(' ')}`);
  // The hover ends with the view change: no stale tooltip (nor reticle) left from before the zoom.
  const tipAfter = await page.evaluate(() => !document.getElementById('tooltip').hidden);
  if (tipAfter) failures.push('the tooltip from before the zoom is still shown (the hover must end when the view changes)');
  if (!(zoomed.s?.maxDepth > before.maxDepth)) failures.push(`no deeper tiles after zooming in (depth ${before.maxDepth} → ${zoomed.s?.maxDepth})`);
  if (!(zoomed.s?.drawnPoints > before.drawnPoints)) failures.push(`points drawn did not grow after zooming in (${before.drawnPoints} → ${zoomed.s?.drawnPoints})`);

  // A manifest of another format: its message, by name.
  await page.goto(`${server.url}/page/?tiles=/bad-tiles/manifest.json`);
  await page.waitForFunction(() => window.surfgradPage?.error, null, { timeout: timeoutS * 1000, polling: 100 }).catch(() => {});
  const bad = await page.evaluate(() => ({ error: window.surfgradPage.error, shown: !document.getElementById('error').hidden }));
  const want = /format "deepscatter" is not 'surfgrad-tiles'/;
  const ok = bad.shown && want.test(bad.error?.message ?? '');
  console.log(`page_tiles: bad manifest: ${ok ? 'ok' : 'WRONG'}: ${bad.error?.message}`);
  if (!ok) failures.push(`a manifest of format 'deepscatter': expected a message matching ${want}; got ${JSON.stringify(bad)}`);
} catch (e) {
  failures.push(`the test itself failed: ${e.stack || e}`);
} finally {
  await browser.close();
  await server.close();
}
if (failures.length) {
  console.error(`page_tiles: FAIL\n  - ${failures.join('\n  - ')}`);
  process.exit(1);
}
console.log('page_tiles: PASS: tiles opened, root drawn, deeper tiles loaded on zoom, a bad manifest refused by name');
