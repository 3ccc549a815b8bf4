// Bundles the map page (src/main.js + regl-scatterplot) into web/page/dist/main.js with esbuild, and
// the worker's table reader (src/tables.js + parquet-wasm + apache-arrow) into dist/tables.js with
// parquet-wasm's module copied beside it (dist/parquet_wasm_bg.wasm, loaded on the first table), and
// the worker's hover-index builder (src/spatial_index.js → dist/spatial_index.js) and the table
// reader's Parquet decoder workers (src/parquet_decoder.js → dist/parquet_decoder.js).
// `node web/page/build.mjs [--watch]`. The worker (map_worker.js) and the dev mock are served as
// they are: the worker imports ../package/surfgrad.js (or ./dev_mock_surfgrad.js with ?mock=1).
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const options = {
  entryPoints: [path.join(here, 'src', 'main.js'), path.join(here, 'src', 'tables.js'), path.join(here, 'src', 'spatial_index.js'),
    path.join(here, 'src', 'parquet_decoder.js')],
  outdir: path.join(here, 'dist'),
  bundle: true,
  format: 'esm',
  target: ['chrome120', 'firefox120', 'safari17'],
  minify: true,
  sourcemap: true,
  logLevel: 'info',
  nodePaths: [path.join(here, '..', 'node_modules')],
};
fs.mkdirSync(path.join(here, 'dist'), { recursive: true });
fs.copyFileSync(path.join(here, '..', 'node_modules', 'parquet-wasm', 'esm', 'parquet_wasm_bg.wasm'),
  path.join(here, 'dist', 'parquet_wasm_bg.wasm'));
if (process.argv.includes('--watch')) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  await esbuild.build(options);
}
