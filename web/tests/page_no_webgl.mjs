// The map page in a browser without WebGL (CI, ~3 s): it must stop with a clear error in the page
// (state 'error', "The plot: …" naming WebGL) within seconds, not stay at 'starting' with an
// uncaught TypeError. (That is how a GPU benchmark run of the page, driven by
// web/bench/page_run.html, waited out its whole budget with nothing to say.)
//
//   node web/tests/page_no_webgl.mjs [--timeout SECONDS]
//
// Needs the page built (node web/page/build.mjs). Exit 0 when it holds, 1 with the reason.
import { serve } from '../tools/serve.mjs';
import { launch } from '../tools/chromium.mjs';

const argv = process.argv.slice(2);
const i = argv.indexOf('--timeout');
const timeoutS = i >= 0 ? Number(argv[i + 1]) : 20;

const t0 = Date.now();
const server = await serve({ port: 0, quiet: true });
// --disable-3d-apis: no WebGL context at all, as a browser whose GPU process gives none.
const browser = await launch({ extraArgs: ['--disable-3d-apis'] });
let failure = null;
try {
  const page = await browser.newPage();
  await page.goto(`${server.url}/page/?mock=1`);
  await page.waitForFunction(() => window.surfgradPage?.state === 'error' || window.surfgradPage?.state === 'idle',
    null, { timeout: timeoutS * 1000, polling: 50 });
  const r = await page.evaluate(() => ({ state: window.surfgradPage.state, error: window.surfgradPage.error,
    shown: !document.getElementById('error').hidden, title: document.getElementById('error-title').textContent }));
  if (r.state !== 'error') failure = `state '${r.state}', expected 'error' without WebGL`;
  else if (!r.shown || !/The plot/.test(r.title) || !/WebGL/.test(r.error?.message ?? ''))
    failure = `the error box does not say the plot needs WebGL: shown ${r.shown}, '${r.title}': ${r.error?.message}`;
  else console.log(`page_no_webgl: ok: ${r.title}: ${r.error.message.slice(0, 160)}`);
} catch (e) {
  failure = `the page did not reach state 'error' in ${timeoutS} s (${e.message.split('\n')[0]})`;
} finally {
  await browser.close();
  await server.close();
}
if (failure) {
  console.log(`page_no_webgl: FAIL: ${failure}`);
  process.exit(1);
}
console.log(`page_no_webgl: PASS in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
