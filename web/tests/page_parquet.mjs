// The map page with Parquet in and out (CI, after page_screenshot.mjs): pyarrow writes a small
// table (2,000 × 64 list<float32> points in 10 clusters, an id and a label column); the page loads
// it by URL, maps it (UMAP) in headless Chromium, draws it in the label colours, saves the map as
// Parquet, and pyarrow reads that back (2,000 rows; x, y finite float32; id; label as written). Then
// bad tables, each of which must show its message while the page keeps the map it has: a missing
// column, a ragged list column, a list of strings, NaN in a row (named), a truncated file, a URL that
// 404s, a URL that is not Parquet, compressed Arrow IPC, a table too big for the tab; and the same
// table as Feather v2 through the file picker. Exit 0 when all hold, 1 with reasons.
//
//   node web/tests/page_parquet.mjs [--out DIR] [--python PY] [--timeout SECONDS]
//
// Needs the page built (node web/page/build.mjs) and pyarrow (--python, default .venv-python/bin/python,
// which scripts/python_env.sh makes).
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serve } from '../tools/serve.mjs';
import { launch } from '../tools/chromium.mjs';

const argv = process.argv.slice(2);
const opt = (name, def) => { const i = argv.indexOf(name); return i >= 0 && i + 1 < argv.length ? argv[i + 1] : def; };
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const outDir = path.resolve(opt('--out', 'build/web-parquet'));
const python = opt('--python', path.join(root, '.venv-python', 'bin', 'python'));
const timeoutS = Number(opt('--timeout', 240));
const dataDir = path.join(outDir, 'parquet-inputs');
fs.mkdirSync(dataDir, { recursive: true });

// ---- the inputs (pyarrow) -----------------------------------------------------------------------
const N = 2000, D = 64;
execFileSync(python, ['-c', `
import numpy as np, pyarrow as pa, pyarrow.parquet as pq, sys
out, n, d = sys.argv[1], ${N}, ${D}
rng = np.random.default_rng(7)
k = rng.integers(0, 10, n)
x = (rng.standard_normal((10, d)) * 4)[k] + rng.standard_normal((n, d))
x = x.astype(np.float32)
offs = np.arange(0, n * d + 1, d, dtype=np.int32)
def lst(v, o): return pa.ListArray.from_arrays(pa.array(o, type=pa.int32()), pa.array(v))
base = {'id': pa.array(np.arange(1000, 1000 + n)), 'label': pa.array([f'cluster {c}' for c in k])}
def write(name, **cols): pq.write_table(pa.table({**base, **cols}), f'{out}/{name}', row_group_size=500)
write('points.parquet', embedding=lst(x.ravel(), offs))
write('other_name.parquet', vectors=lst(x.ravel(), offs))
rag = offs.copy(); rag[700:] += 1
write('ragged.parquet', embedding=lst(np.zeros(n * d + 1, np.float32), rag))
write('strings.parquet', embedding=pa.array([[str(i)] for i in range(n)]))
xn = x.copy(); xn[1234, 5] = np.nan
write('nan.parquet', embedding=lst(xn.ravel(), offs))
b = open(f'{out}/points.parquet', 'rb').read()
open(f'{out}/truncated.parquet', 'wb').write(b[: len(b) // 2])
open(f'{out}/table.csv', 'w').write('a,b\\n1,2\\n' * 50)
import pyarrow.feather as fe
t = pq.read_table(f'{out}/points.parquet')
fe.write_feather(t, f'{out}/points.feather', compression='uncompressed')
fe.write_feather(t, f'{out}/points_lz4.feather', compression='lz4')
`, dataDir], { stdio: 'inherit' });

const failures = [];
// Parquet decoder workers started (tables.js; their script is fetched once each: no-store).
let decoderWorkers = 0;
const server = await serve({ port: 0, quiet: true, onRequest: (url) => { if (url.startsWith('/page/dist/parquet_decoder.js')) decoderWorkers++; } });
const browser = await launch();
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1, acceptDownloads: true });
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error' || process.env.VERBOSE) console.log('[page]', m.text().slice(0, 300)); });
  page.on('pageerror', (e) => console.log('[page] uncaught:', e.message));
  // /test-data/NAME: the files above (404 for others), served beside the page (to its worker too).
  await context.route((u) => u.pathname.startsWith('/test-data/'), (route) => {
    const f = path.join(dataDir, path.basename(new URL(route.request().url()).pathname));
    if (fs.existsSync(f)) route.fulfill({ status: 200, body: fs.readFileSync(f), contentType: 'application/octet-stream' });
    else route.fulfill({ status: 404, body: 'not found' });
  });
  const t0 = Date.now();
  // (decoders=2: the points' 4 row groups through tables.js's Parquet decoder workers, which a
  // 2-core host would not start by default)
  await page.goto(`${server.url}/page/?data=/test-data/points.parquet&method=umap&run=1&decoders=2`);
  await page.waitForFunction(() => ['done', 'error', 'cancelled'].includes(window.surfgradPage?.state)
    && (window.surfgradPage.state !== 'done' || window.surfgradPage.drawn), null, { timeout: timeoutS * 1000, polling: 250 });
  await page.waitForTimeout(300);
  const st = await page.evaluate(() => {
    const p = window.surfgradPage;
    return { state: p.state, error: p.error, n: p.data?.n, d: p.data?.d, labelColumn: p.data?.labelColumn, column: p.data?.column,
      draws: p.draws, result: p.result && { n: p.result.n, timings: p.result.timings }, colours: p.colours().length };
  });
  console.log(`page_parquet: points.parquet → state ${st.state} in ${((Date.now() - t0) / 1000).toFixed(1)} s; ${st.n} × ${st.d}, `
    + `column ${st.column}, labels ${st.labelColumn} (${st.colours} colours), ${st.draws} layouts drawn, ${decoderWorkers} decoder workers`);
  if (st.state !== 'done') failures.push(`the Parquet map did not complete: ${st.state} ${JSON.stringify(st.error)}`);
  if (st.n !== N || st.d !== D) failures.push(`loaded ${st.n} × ${st.d}, expected ${N} × ${D}`);
  if (st.labelColumn !== 'label' || st.colours !== 10) failures.push(`labels: column ${st.labelColumn}, ${st.colours} colours (expected 'label', 10)`);
  if (st.draws < 2) failures.push(`${st.draws} intermediate layouts drawn (expected ≥ 2)`);
  if (decoderWorkers < 2) failures.push(`${decoderWorkers} Parquet decoder workers started (expected 2 with ?decoders=2 and 4 row groups)`);
  await page.screenshot({ path: path.join(outDir, 'page_parquet.png') });

  // ---- save as Parquet; pyarrow reads it back -----------------------------------------------------
  if (st.state === 'done') {
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#save-parquet')]);
    const saved = path.join(outDir, 'map.parquet');
    await download.saveAs(saved);
    const [npyDownload] = await Promise.all([page.waitForEvent('download'), page.click('#save-npy')]);
    const savedNpy = path.join(outDir, 'map.npy');
    await npyDownload.saveAs(savedNpy);
    try {
      const report = execFileSync(python, ['-c', `
import sys, numpy as np, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1]); m = np.load(sys.argv[2])
x, y = t['x'].to_numpy(), t['y'].to_numpy()
assert t.num_rows == ${N}, f'{t.num_rows} rows'
assert t.column_names == ['x', 'y', 'id', 'label'], t.column_names
assert str(t.schema.field('x').type) == 'float' and str(t.schema.field('id').type) == 'int64', t.schema
assert np.isfinite(x).all() and np.isfinite(y).all() and x.std() > 0
assert t['id'].to_pylist() == list(range(${N}))
src = pq.read_table(sys.argv[3])
assert t['label'].to_pylist() == src['label'].to_pylist()
assert m.shape == (${N}, 2) and m.dtype == np.float32 and np.array_equal(m[:, 0], x) and np.array_equal(m[:, 1], y)
print(f'{t.num_rows} rows, columns {t.column_names}, x in [{x.min():.2f}, {x.max():.2f}]; map.npy {m.shape} {m.dtype} equal')
`, saved, savedNpy, path.join(dataDir, 'points.parquet')], { encoding: 'utf8' });
      console.log(`page_parquet: pyarrow read the saved map: ${report.trim()}`);
    } catch (e) {
      failures.push(`pyarrow could not read the saved map as expected: ${e.stderr || e.message}`);
    }
  }

  // ---- bad input: a message each, and the page keeps its map -------------------------------------
  const bad = [
    ['other_name.parquet?column', /no column 'embedding'.*vectors/, 'column=embedding'],
    ['strings.parquet', /no column of points/],
    ['truncated.parquet', /truncated/],
    ['missing.parquet', /HTTP 404/],
    ['table.csv', /not Parquet or Arrow IPC.*starts with 'a,b/],
    ['points_lz4.feather', /compressed Arrow IPC \(lz4\/zstd\) is not supported in the browser; write it uncompressed/],
    ['points.parquet?big', /2,000 rows × 64 = 500 KiB of float32 points is more than this tab can map \(at most 4 KiB/, 'maxBytes=4096'],
  ];
  for (const [file, want, query] of bad) {
    const url = `/test-data/${file.split('?')[0]}`;
    // URL parameters that the page reads at load (column=, maxBytes=) are set through its params.
    const r = await page.evaluate(async ({ url, query }) => {
      const p = new URLSearchParams(location.search);
      for (const [k, v] of new URLSearchParams(query ?? '')) p.set(k, v);
      history.replaceState(null, '', `?${p}`);
      window.surfgradPage.error = null;
      document.getElementById('data-url').value = url;
      document.getElementById('data-form').requestSubmit();
      await new Promise((ok) => { const t = setInterval(() => { if (window.surfgradPage.state !== 'loading') { clearInterval(t); ok(); } }, 50); });
      const s = window.surfgradPage;
      const out = { state: s.state, message: s.error?.message ?? null, n: s.data?.n, shown: !document.getElementById('error').hidden };
      for (const [k] of new URLSearchParams(query ?? '')) p.delete(k);
      history.replaceState(null, '', `?${p}`);
      return out;
    }, { url, query });
    const ok = r.message && want.test(r.message) && r.shown && r.state === 'idle' && r.n === N;
    console.log(`page_parquet: ${file}: ${ok ? 'ok' : 'WRONG'}: ${r.message}`);
    if (!ok) failures.push(`${file}: expected a message matching ${want} with the page idle on its ${N} points; got ${JSON.stringify(r)}`);
  }
  // Feather v2 (Arrow IPC) through the file picker: the same table, loaded (not mapped again).
  {
    await page.setInputFiles('#data-file', path.join(dataDir, 'points.feather'));
    await page.waitForFunction(() => window.surfgradPage.state !== 'loading' && /feather/.test(window.surfgradPage.data?.name ?? ''), null, { timeout: 60000 });
    const r = await page.evaluate(() => { const d = window.surfgradPage.data; return { name: d.name, n: d.n, d: d.d, labelColumn: d.labelColumn, error: window.surfgradPage.error }; });
    const ok = r.n === N && r.d === D && r.labelColumn === 'label' && !r.error;
    console.log(`page_parquet: points.feather (file picker): ${ok ? 'ok' : 'WRONG'}: ${r.name}, ${r.n} × ${r.d}, labels ${r.labelColumn}`);
    if (!ok) failures.push(`points.feather: expected ${N} × ${D} with labels 'label'; got ${JSON.stringify(r)}`);
  }
  // A ragged list and NaN are found while the points are read for the map (a load reads the
  // metadata, the first row and the labels): load (fine), run, and the run names the row.
  for (const [file, want] of [
    ['ragged.parquet', /column 'embedding', row 699: a list of 65 values where the rows before have 64 \(a ragged list column/],
    ['nan.parquet', /column 'embedding', row 1,234: NaN at dimension 5/],
  ]) {
    await page.fill('#data-url', `/test-data/${file}`);
    await page.evaluate(() => document.getElementById('data-form').requestSubmit());
    await page.waitForFunction(() => window.surfgradPage.state !== 'loading', null, { timeout: 60000 });
    await page.click('#run');
    await page.waitForFunction(() => ['done', 'error', 'cancelled'].includes(window.surfgradPage.state), null, { timeout: timeoutS * 1000 });
    const r = await page.evaluate(() => ({ state: window.surfgradPage.state, message: window.surfgradPage.error?.message }));
    const ok = want.test(r.message ?? '') && r.state === 'error';
    console.log(`page_parquet: ${file}: ${ok ? 'ok' : 'WRONG'}: ${r.message}`);
    if (!ok) failures.push(`${file}: expected a message matching ${want}; got ${JSON.stringify(r)}`);
  }
  {
    // And the page loads and maps again afterwards.
    await page.fill('#data-url', '/test-data/points.parquet');
    await page.evaluate(() => document.getElementById('data-form').requestSubmit());
    await page.waitForFunction(() => window.surfgradPage.state === 'idle', null, { timeout: 60000 });
    const again = await page.evaluate(() => window.surfgradPage.data?.n);
    if (again !== N) failures.push(`after the bad inputs the page did not load points.parquet again (${again})`);
  }
} catch (e) {
  failures.push(`the test itself failed: ${e.stack || e}`);
} finally {
  await browser.close();
  await server.close();
}
if (failures.length) {
  console.error(`page_parquet: FAIL\n  - ${failures.join('\n  - ')}`);
  process.exit(1);
}
console.log('page_parquet: PASS: Parquet in, map drawn, Parquet and .npy out, bad tables refused by name');
