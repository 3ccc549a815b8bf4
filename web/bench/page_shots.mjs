// Screenshots of the map page's two views that were off (not in CI; for looking at by eye):
// a table's column selects in the sidebar, and a tiled map zoomed in after a hover (the hover's
// tooltip and reticle must be gone).
//   node web/bench/page_shots.mjs TABLE.parquet TILES_DIR OUTDIR
import fs from 'node:fs';
import path from 'node:path';
import { serve } from '../tools/serve.mjs';
import { launch } from '../tools/chromium.mjs';

const [table, tilesDir, outDir] = process.argv.slice(2).map((p) => p && path.resolve(p));
if (!outDir) { console.error('usage: node web/bench/page_shots.mjs TABLE.parquet TILES_DIR OUTDIR'); process.exit(2); }
fs.mkdirSync(outDir, { recursive: true });
const server = await serve({ port: 0, quiet: true });
const browser = await launch();
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  await context.route((u) => u.pathname.startsWith('/shots/'), (route) => {
    const rel = new URL(route.request().url()).pathname.slice('/shots/'.length);
    const f = rel === 'table.parquet' ? table : path.resolve(tilesDir, rel.replace(/^tiles\//, ''));
    if (fs.existsSync(f) && fs.statSync(f).isFile()) route.fulfill({ status: 200, body: fs.readFileSync(f) });
    else route.fulfill({ status: 404, body: 'not found' });
  });
  const page = await context.newPage();
  page.on('pageerror', (e) => console.log('[page] uncaught:', e.message));
  await page.goto(`${server.url}/page/?data=/shots/table.parquet`);
  await page.waitForFunction(() => window.surfgradPage?.data || window.surfgradPage?.error, null, { timeout: 60000 });
  const sel = await page.evaluate(() => {
    const aside = document.querySelector('aside').getBoundingClientRect();
    return ['column', 'label-column'].map((id) => { const r = document.getElementById(id).getBoundingClientRect(); return { id, right: r.right, asideRight: aside.right }; });
  });
  console.log('selects:', JSON.stringify(sel));
  await page.screenshot({ path: path.join(outDir, 'sidebar.png'), clip: { x: 0, y: 0, width: 420, height: 400 } });

  await page.goto(`${server.url}/page/?tiles=/shots/tiles/&tileDensity=0.002`);
  await page.waitForFunction(() => window.__tiles?.status()?.firstViewMs != null, null, { timeout: 60000, polling: 100 });
  await page.waitForFunction(() => window.__tiles.status().inFlight === 0, null, { timeout: 60000, polling: 100 });
  const pos = await page.evaluate(() => { const [x, y] = window.surfgradPage.view.screenPosition(0); const r = window.surfgradPage.plotRect(); return [r.x + x, r.y + y]; });
  await page.mouse.move(pos[0] - 3, pos[1] - 3);
  await page.mouse.move(pos[0], pos[1]);
  await page.waitForFunction(() => !document.getElementById('tooltip').hidden, null, { timeout: 10000, polling: 100 }).catch(() => {});
  await page.screenshot({ path: path.join(outDir, 'tiles_hover.png') });
  const m = await page.evaluate(() => window.__tiles.manifest());
  const deepest = m.tiles.filter((t) => Number(t.key.split('/')[0]) === m.depth).sort((a, b) => b.rows - a.rows)[0];
  await page.evaluate((b) => window.__tiles.zoomTo(...b), deepest.bounds);
  await page.waitForTimeout(300);
  await page.waitForFunction(() => window.__tiles.status().inFlight === 0, null, { timeout: 60000, polling: 100 });
  await page.waitForTimeout(800);
  const tip = await page.evaluate(() => !document.getElementById('tooltip').hidden);
  console.log(`zoomed: tooltip ${tip ? 'still shown' : 'hidden'}`);
  await page.screenshot({ path: path.join(outDir, 'tiles_zoomed.png') });
} finally {
  await browser.close();
  await server.close();
}
