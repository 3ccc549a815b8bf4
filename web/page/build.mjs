// Bundles the map page (src/main.js + regl-scatterplot) into web/page/dist/main.js with esbuild.
// `node web/page/build.mjs [--watch]`. The worker (map_worker.js) and the dev mock are served as
// they are: the worker imports ../package/surfgrad.js (or ./dev_mock_surfgrad.js with ?mock=1).
import * as esbuild from 'esbuild';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const options = {
  entryPoints: [path.join(here, 'src', 'main.js')],
  outdir: path.join(here, 'dist'),
  bundle: true,
  format: 'esm',
  target: ['chrome120', 'firefox120', 'safari17'],
  minify: true,
  sourcemap: true,
  logLevel: 'info',
  nodePaths: [path.join(here, '..', 'node_modules')],
};
if (process.argv.includes('--watch')) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  await esbuild.build(options);
}
