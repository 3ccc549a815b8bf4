// The page's table reader (web/page/src/tables.js) in Node, against values pyarrow wrote (CI, ~2 s):
// every point type the column rules take — list<float64>, large_list<int16>, fixed_size_list<float16>,
// list<int64>, separate float32 columns (the all-floats rule), Arrow IPC file and stream — read in
// odd-sized blocks must equal numpy's float32 of the same values exactly; the map written back
// (mapToParquet) must read in pyarrow as x, y, id, label.
//
//   node web/tests/page_tables.mjs [--out DIR] [--python PY]
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as T from '../page/src/tables.js';

const argv = process.argv.slice(2);
const opt = (name, def) => { const i = argv.indexOf(name); return i >= 0 && i + 1 < argv.length ? argv[i + 1] : def; };
const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.resolve(opt('--out', 'build/web-tables'), 'tables-inputs');
const python = opt('--python', path.join(here, '..', '..', '.venv-python', 'bin', 'python'));
fs.mkdirSync(outDir, { recursive: true });

const N = 1000, D = 5;
execFileSync(python, ['-c', `
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq, pyarrow.feather as fe
out, n, d = sys.argv[1], ${N}, ${D}
x = np.random.default_rng(3).standard_normal((n, d))
o32, o64 = np.arange(0, n * d + 1, d, dtype=np.int32), np.arange(0, n * d + 1, d, dtype=np.int64)
cols = {
  'f64list': (pa.ListArray.from_arrays(pa.array(o32), pa.array(x.ravel())), x),
  'i16list': (pa.LargeListArray.from_arrays(pa.array(o64), pa.array((x * 100).astype(np.int16).ravel())), (x * 100).astype(np.int16)),
  'f16fsl': (pa.FixedSizeListArray.from_arrays(pa.array(x.astype(np.float16).ravel()), d), x.astype(np.float16)),
  'i64list': (pa.ListArray.from_arrays(pa.array(o32), pa.array((x * 1000).astype(np.int64).ravel())), (x * 1000).astype(np.int64)),
}
t = pa.table({k: v[0] for k, v in cols.items()} | {'label': pa.array([f'c{i % 7}' for i in range(n)])})
pq.write_table(t, f'{out}/types.parquet', row_group_size=300)
fe.write_feather(t, f'{out}/types.arrow', compression='uncompressed', chunksize=300)
with pa.OSFile(f'{out}/types.arrows', 'wb') as s:
  w = pa.ipc.new_stream(s, t.schema); w.write_table(t, max_chunksize=300); w.close()
pq.write_table(pa.table({f'c{j}': pa.array(x[:, j].astype(np.float32)) for j in range(d)}), f'{out}/floatcols.parquet', row_group_size=300)
bad = x.copy(); bad[650, 2] = np.nan
pq.write_table(pa.table({'f64list': pa.ListArray.from_arrays(pa.array(o32), pa.array(bad.ravel()))}), f'{out}/nan.parquet', row_group_size=300)
for k, v in cols.items(): np.asarray(v[1], np.float32).tofile(f'{out}/{k}.f32')
x.astype(np.float32).tofile(f'{out}/floatcols.f32')
`, outDir], { stdio: 'inherit' });

await T.initTables(fs.readFileSync(path.join(here, '..', 'node_modules', 'parquet-wasm', 'esm', 'parquet_wasm_bg.wasm')));
const failures = [];
// Decoder "workers" run in this thread (the same handler dist/parquet_decoder.js runs; messages
// asynchronous, blocks transferred as they would be): pointBlocks' parallel path in Node.
function inProcessDecoder() {
  const w = { onmessage: null, onerror: null, terminated: false, terminate() { this.terminated = true; } };
  const handle = T.rowGroupDecoder((data) => setTimeout(() => { if (!w.terminated) w.onmessage({ data }); }));
  // (Node's file-backed Blobs are not cloneable; a browser's are, without copying their bytes.)
  w.postMessage = (data) => setTimeout(() => { if (!w.terminated) handle({ ...structuredClone({ ...data, blob: null }), blob: data.blob }); });
  return w;
}
const pointsOf = async (t, cols, d, file, decoders) => {
  const got = new Float32Array(t.n * d);
  let o = 0;
  for await (const b of T.pointBlocks(t, cols, d, file, 7 * 4 * d, { decoders, spawn: inProcessDecoder })) { got.set(b, o); o += b.length; }
  return { got, o };
};

async function check(file, column, refName) {
  const t = await T.openTable(await fs.openAsBlob(path.join(outDir, file)), file);
  const cols = T.choosePointColumns(t.cols, column ? [column] : null, file);
  const d = await T.pointDims(t, cols, file);
  const ref = new Float32Array(fs.readFileSync(path.join(outDir, `${refName}.f32`)).buffer.slice(0));
  // Parquet (4 row groups) also through 2 and 3 decoders: the same values in the same order.
  for (const decoders of t.format === 'Parquet' ? [1, 2, 3] : [1]) {
    const { got, o } = await pointsOf(t, cols, d, file, decoders);
    let bad = -1;
    for (let i = 0; i < ref.length && bad < 0; i++) if (got[i] !== ref[i]) bad = i;
    const ok = t.n === N && d === D && o === N * D && bad < 0;
    console.log(`page_tables: ${file} ${cols.join(',')} (${t.format}, ${decoders} decoder${decoders > 1 ? 's' : ''}): ${t.n} × ${d} ${ok ? 'equal to numpy float32' : `WRONG${bad >= 0 ? ` at ${bad}: ${got[bad]} vs ${ref[bad]}` : ''}`}`);
    if (!ok) failures.push(`${file} ${cols} (${decoders} decoders): ${t.n} × ${d}, ${o} values read, first difference at ${bad}`);
  }
  return t;
}

// A NaN in the third row group: the same error, naming its row, from the serial and parallel readers.
async function checkNan() {
  const t = await T.openTable(await fs.openAsBlob(path.join(outDir, 'nan.parquet')), 'nan.parquet');
  const messages = [];
  for (const decoders of [1, 3]) {
    try { await pointsOf(t, ['f64list'], D, 'nan.parquet', decoders); messages.push('no error'); } catch (e) { messages.push(`${e.name}: ${e.message}`); }
  }
  const ok = messages.every((m) => m === messages[0]) && /row 650\b/.test(messages[0]) && /NaN at dimension 2/.test(messages[0]);
  console.log(`page_tables: NaN in row 650: ${ok ? 'named alike by 1 and 3 decoders' : 'WRONG'} (${messages.join(' | ')})`);
  if (!ok) failures.push(`nan.parquet: ${messages.join(' | ')}`);
}
try {
  for (const f of ['types.parquet', 'types.arrow', 'types.arrows'])
    for (const c of ['f64list', 'i16list', 'f16fsl', 'i64list']) await check(f, c, c);
  await check('floatcols.parquet', null, 'floatcols');
  await checkNan();
  // The map back: x, y, id, label (the label column's values as read).
  const t = await T.openTable(await fs.openAsBlob(path.join(outDir, 'types.parquet')), 'types.parquet');
  const labels = await T.readLabels(t, 'label', 'types.parquet');
  if (labels.names.length !== 7 || labels.counts.reduce((a, b) => a + b, 0) !== N) failures.push(`labels: ${labels.names} ${labels.counts}`);
  const emb = Float32Array.from({ length: 2 * N }, (_, i) => i / 2);
  fs.writeFileSync(path.join(outDir, 'map.parquet'), await T.mapToParquet(emb, N, { name: 'label', values: labels.values }));
  const r = execFileSync(python, ['-c', `
import sys, numpy as np, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
assert t.column_names == ['x', 'y', 'id', 'label'], t.column_names
assert np.array_equal(t['x'].to_numpy(), np.arange(${N}, dtype=np.float32)) and np.array_equal(t['y'].to_numpy(), np.arange(${N}) + np.float32(0.5))
assert t['id'].to_pylist() == list(range(${N})) and t['label'].to_pylist() == [f'c{i % 7}' for i in range(${N})]
print('x, y, id, label as written')`, path.join(outDir, 'map.parquet')], { encoding: 'utf8' });
  console.log(`page_tables: mapToParquet → pyarrow: ${r.trim()}`);
} catch (e) {
  failures.push(`${e.stack || e}${e.stderr ? `\n${e.stderr}` : ''}`);
}
if (failures.length) {
  console.error(`page_tables: FAIL\n  - ${failures.join('\n  - ')}`);
  process.exit(1);
}
console.log('page_tables: PASS');
