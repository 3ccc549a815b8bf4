// Parquet and Arrow IPC / Feather v2 tables in the map worker: which columns hold the points and the
// labels, the points read in row batches (never the n × d floats whole), the map written back as
// Parquet. parquet-wasm (Rust's arrow/parquet crates in WebAssembly) reads Parquet row by row batch
// out of a Blob (Blob.slice: the browser keeps a File or a fetched body on disk) and hands each batch
// over as Arrow IPC; apache-arrow reads that, and Arrow IPC files and streams, in JavaScript.
// Bundled by build.mjs into dist/tables.js (with parquet_wasm_bg.wasm beside it); loaded by
// map_worker.js on the first table.
//
// The column rules are the native CLI's (src/io/table_columns.hpp, docs/cli.md): the points are
// the column `embedding`, else the first list column of numbers, else every column if all are
// floats; the map's table is x, y (float32), then id (the row number, int64) and the label column
// carried through under its own name.
import initParquet, { ParquetFile, Table as WasmTable, writeParquet, WriterPropertiesBuilder, Compression } from 'parquet-wasm/esm/parquet_wasm.js';
import { RecordBatchReader, tableFromIPC, tableToIPC, Table, Type, vectorFromArray, makeVector, Utf8 } from 'apache-arrow';

export const EMBEDDING_COLUMN = 'embedding';
const LABEL_NAMES = ['label', 'labels', 'class', 'category', 'target', 'cluster', 'topic'];
export const TOP_LABELS = 20;

// A data error the page shows as it is: names the file, the column and, where it helps, the row.
export class TableError extends Error {
  constructor(kind, message) { super(message); this.name = 'DataError'; this.kind = kind; }
}

let wasmReady = null;
// parquet-wasm's module: dist/parquet_wasm_bg.wasm beside this bundle (`wasm` for other hosts: bytes).
export const initTables = (wasm) => (wasmReady ??= initParquet({ module_or_path: wasm ?? new URL('./parquet_wasm_bg.wasm', import.meta.url) }));
const ensureParquet = () => initTables();

// ---- what a column is ---------------------------------------------------------------------------

const isNumber = (t) => t.typeId === Type.Float || t.typeId === Type.Int;
const isList = (t) => t.typeId === Type.List || t.typeId === Type.FixedSizeList || t.typeId === Type.LargeList;
function kindOf(type) {
  if (isList(type)) return isNumber(type.children[0].type) ? 'points' : 'other-list';
  if (type.typeId === Type.Float) return 'float';
  if (type.typeId === Type.Int) return 'integer';
  if (type.typeId === Type.Utf8 || type.typeId === Type.LargeUtf8 || type.typeId === Type.Dictionary || type.typeId === Type.Bool) return 'text';
  return 'other';
}
const describe = (schema) => schema.fields.map((f) => ({ name: f.name, type: String(f.type), kind: kindOf(f.type) }));
const listNames = (cols) => cols.slice(0, 12).map((c) => c.name).join(', ') + (cols.length > 12 ? `, … (${cols.length})` : '');

// The point columns: `wanted` (one list column, or numeric columns a,b,c) or the CLI's rule.
export function choosePointColumns(cols, wanted, file) {
  const byName = new Map(cols.map((c) => [c.name, c]));
  if (wanted && wanted.length) {
    for (const w of wanted) {
      const c = byName.get(w);
      if (!c) throw new TableError('value', `${file}: no column '${w}' (its columns: ${listNames(cols)}); pick one of its list columns of numbers`);
      if (c.kind === 'other-list') throw new TableError('dtype', `${file}: column '${w}' is a list of non-numbers (${c.type}); the points must be a list of floats or integers`);
      if (c.kind === 'points' && wanted.length > 1) throw new TableError('value', `${file}: column '${w}' is a list; name one list column, or several numeric columns`);
      if (c.kind !== 'points' && c.kind !== 'float' && c.kind !== 'integer')
        throw new TableError('dtype', `${file}: column '${w}' is not numeric (${c.type}); the points must be a list of numbers (one point a row) or numeric columns`);
    }
    return wanted;
  }
  if (byName.get(EMBEDDING_COLUMN)?.kind === 'points') return [EMBEDDING_COLUMN];
  const list = cols.find((c) => c.kind === 'points');
  if (list) return [list.name];
  if (cols.length && cols.every((c) => c.kind === 'float')) return cols.map((c) => c.name);
  throw new TableError('value', `${file}: no column of points (a list of numbers, e.g. '${EMBEDDING_COLUMN}', or all-float columns); its columns: `
    + cols.map((c) => `${c.name} (${c.type})`).slice(0, 12).join(', '));
}

// The label column: `wanted` ('' for none), else one named like a label, else none.
export function chooseLabelColumn(cols, wanted, file) {
  if (wanted === '') return null;
  if (wanted) {
    const c = cols.find((x) => x.name === wanted);
    if (!c) throw new TableError('value', `${file}: no label column '${wanted}' (its columns: ${listNames(cols)})`);
    if (c.kind !== 'text' && c.kind !== 'integer' && c.kind !== 'float') throw new TableError('dtype', `${file}: label column '${wanted}' is ${c.type}; labels must be text or numbers`);
    return wanted;
  }
  return cols.find((c) => LABEL_NAMES.includes(c.name.toLowerCase()) && ['text', 'integer'].includes(c.kind))?.name ?? null;
}

// ---- opening ------------------------------------------------------------------------------------

async function headBytes(blob, start, end) { return new Uint8Array(await blob.slice(start, end).arrayBuffer()); }
const ascii = (b) => String.fromCharCode(...b);

// The table in `blob` ({ format, n, cols, batches(columns, rows) }); throws a TableError for a file
// that is not Parquet / Arrow IPC, truncated or corrupt.
export async function openTable(blob, file) {
  if (blob.size < 12) throw new TableError('io', `${file}: ${blob.size} bytes is too short to be Parquet or Arrow IPC (truncated or empty?)`);
  const head = await headBytes(blob, 0, 8);
  if (ascii(head.subarray(0, 4)) === 'PAR1') return openParquet(blob, file);
  if (ascii(head.subarray(0, 6)) === 'ARROW1') {
    if (ascii(await headBytes(blob, blob.size - 6, blob.size)) !== 'ARROW1')
      throw new TableError('io', `${file}: an Arrow IPC file without its footer: truncated (${blob.size.toLocaleString('en-US')} bytes)`);
    return openIpc(blob.slice(8), file, 'Arrow IPC file');
  }
  if (head[0] === 0xff && head[1] === 0xff && head[2] === 0xff && head[3] === 0xff) return openIpc(blob, file, 'Arrow IPC stream');
  if (head[0] === 0x93 && ascii(head.subarray(1, 6)) === 'NUMPY') return { format: 'npy' };
  const shown = [...head].map((c) => (c >= 32 && c < 127 ? String.fromCharCode(c) : '.')).join('');
  throw new TableError('io', `${file}: not Parquet or Arrow IPC / Feather v2 (it starts with '${shown}'); the page reads .npy, Parquet and Arrow IPC files`);
}

async function openParquet(blob, file) {
  if (ascii(await headBytes(blob, blob.size - 4, blob.size)) !== 'PAR1')
    throw new TableError('io', `${file}: a Parquet file without its footer (no PAR1 at the end): truncated (${blob.size.toLocaleString('en-US')} bytes)`);
  await ensureParquet();
  let pf, schema, n, groupRows;
  try {
    pf = await ParquetFile.fromFile(blob);
    const meta = pf.metadata();
    n = meta.fileMetadata().numRows();
    groupRows = meta.rowGroups().map((g) => g.numRows());
    schema = tableFromIPC(pf.schema().intoIPCStream()).schema;
  } catch (e) {
    throw new TableError('io', `${file}: corrupt Parquet metadata: ${e?.message ?? e}`);
  }
  const cols = describe(schema);
  return {
    format: 'Parquet', n, cols, blob, groupRows,
    // Arrow record batches of `columns`, about `rows` rows each; `rowGroups`: only those row groups.
    async *batches(columns, rows, rowGroups) {
      let stream;
      try { stream = await pf.stream({ columns, batchSize: rows, concurrency: 1, ...(rowGroups ? { rowGroups } : {}) }); } catch (e) { throw corrupt(file, e); }
      const reader = stream.getReader();
      try {
        for (;;) {
          let r;
          try { r = await reader.read(); } catch (e) { throw corrupt(file, e); }
          if (r.done) return;
          const t = tableFromIPC(r.value.intoIPCStream());
          for (const b of t.batches) yield b;
        }
      } finally { reader.releaseLock?.(); }
    },
  };
}

const corrupt = (file, e) => (e instanceof TableError ? e : new TableError('io', `${file}: corrupt or truncated data: ${e?.message ?? e}`));

// Arrow IPC, read as a stream (an IPC file after its 8-byte magic is one): a first pass counts the
// rows (the schema and batch headers are all it needs to keep), the map's passes read the batches.
async function openIpc(blob, file, format) {
  const open = async () => {
    try {
      const r = await RecordBatchReader.from(blob.stream());
      await r.open();
      return r;
    } catch (e) { throw corrupt(file, e); }
  };
  const first = await open();
  const cols = describe(first.schema);
  let n = 0;
  try { for await (const b of first) n += b.numRows; } catch (e) { throw ipcError(file, e); }
  return {
    format, n, cols,
    async *batches(columns) {
      const r = await open();
      try {
        for await (const b of r) yield b; // (not b.select(columns): apache-arrow 21 loses the list offsets there)
      } catch (e) { throw ipcError(file, e); }
    },
  };
}
const ipcError = (file, e) => (/compressed/i.test(e?.message ?? '')
  ? new TableError('io', `${file}: compressed Arrow IPC (lz4/zstd) is not supported in the browser; write it uncompressed (pyarrow.feather.write_feather(t, path, compression='uncompressed'))`)
  : corrupt(file, e));

// ---- points -------------------------------------------------------------------------------------

function halfToFloat(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}
// Values [a, b) of a numeric Arrow Data as float32, into out at o.
function copyNumbers(data, a, b, out, o) {
  const v = data.values, t = data.type;
  if (t.typeId === Type.Float && t.precision === 0) { for (let i = a; i < b; i++) out[o + i - a] = halfToFloat(v[i]); return; }
  if (typeof v[0] === 'bigint') { for (let i = a; i < b; i++) out[o + i - a] = Number(v[i]); return; }
  out.set(v.subarray(a, b), o);
}

// One Arrow batch's point columns → Float32Array rows × d, checked (nulls, ragged lists, NaN).
function batchPoints(batch, columns, d, row0, file) {
  const rows = batch.numRows;
  const out = new Float32Array(rows * d);
  const fail = (kind, col, i, what) => { throw new TableError(kind, `${file}: column '${col}', row ${(row0 + i).toLocaleString('en-US')}: ${what}`); };
  for (let j = 0; j < columns.length; j++) {
    const vec = batch.getChild(columns[j]);
    let r = 0;
    for (const data of vec.data) {
      if (data.nullCount > 0) for (let i = 0; i < data.length; i++) if (!data.getValid(i)) fail('value', columns[j], r + i, 'null; every row needs a point');
      if (columns.length > 1) {
        const base = data.offset;
        for (let i = 0; i < data.length; i++) {
          const v = data.values[base + i];
          out[(r + i) * d + j] = data.type.typeId === Type.Float && data.type.precision === 0 ? halfToFloat(v) : Number(v);
        }
      } else {
        const child = data.children[0];
        if (child.nullCount > 0) fail('value', columns[j], r, 'a null inside a list (a list holds numbers only)');
        let start;
        if (data.type.typeId === Type.FixedSizeList) start = data.offset * d;
        else {
          const off = data.valueOffsets;
          for (let i = 0; i < data.length; i++) {
            const len = Number(off[data.offset + i + 1]) - Number(off[data.offset + i]);
            if (len !== d) fail('shape', columns[j], r + i, `a list of ${len} values where the rows before have ${d} (a ragged list column: every point needs the same d)`);
          }
          start = Number(off[data.offset]);
        }
        copyNumbers(child, child.offset + start, child.offset + start + data.length * d, out, r * d);
      }
      r += data.length;
    }
  }
  for (let k = 0; k < out.length; k++) {
    if (!Number.isFinite(out[k])) fail('value', columns.length > 1 ? columns[k % d] : columns[0], Math.floor(k / d),
      `${out[k]} at dimension ${k % d}; the points must be finite (drop or fill the row)`);
  }
  return out;
}

// d of the point columns: a fixed-size list's size, else the first row's length (or #columns).
export async function pointDims(table, columns, file) {
  if (columns.length > 1) return columns.length;
  const c = table.cols.find((x) => x.name === columns[0]);
  const m = /^FixedSizeList\[(\d+)\]/.exec(c.type);
  if (m) return Number(m[1]);
  if (c.kind !== 'points') return 1;
  for await (const b of table.batches(columns, 1024)) {
    const data = b.getChild(columns[0]).data[0];
    if (data.length === 0) continue;
    for (let i = 0; i < data.length; i++) {
      if (data.getValid(i)) return Number(data.valueOffsets[data.offset + i + 1]) - Number(data.valueOffsets[data.offset + i]);
    }
  }
  throw new TableError('value', `${file}: column '${columns[0]}' has no rows`);
}

// The points as a PointSource's blocks: Float32Array of whole rows, in order, about `blockBytes` each.
// A Parquet file of several row groups is decoded by `decoders` workers at once (parquet-wasm runs
// on one thread: ~140 MB/s of list<float32> on the GPU machine's host, 2.2–2.4 s of a 1M × 64
// map's run); files of one row group, and hosts without workers, are read here.
export async function* pointBlocks(table, columns, d, file, blockBytes = 16 << 20, { decoders = defaultDecoders(), spawn = spawnDecoder } = {}) {
  const rows = Math.max(1, Math.floor(blockBytes / (4 * d)));
  const groups = table.groupRows;
  if (groups && groups.length > 1 && decoders > 1 && groups.every((g) => g * d * 4 <= MAX_GROUP_BYTES)) {
    yield* parallelPointBlocks(table, columns, d, file, rows, Math.min(decoders, groups.length), spawn);
    return;
  }
  let row = 0;
  for await (const b of table.batches(columns, rows)) {
    if (b.numRows === 0) continue;
    yield batchPoints(b, columns, d, row, file);
    row += b.numRows;
  }
  if (row !== table.n) throw truncated(file, row, table.n);
}

const truncated = (file, row, n) => new TableError('io', `${file}: ${row.toLocaleString('en-US')} rows read where its metadata says ${n.toLocaleString('en-US')} (truncated?)`);

// A decoder holds at most AHEAD decoded row groups the reader has not taken, and the parallel path
// is taken only for row groups of at most MAX_GROUP_BYTES of points, so the tab holds at most
// decoders × AHEAD × 64 MB of points at once (a file of bigger row groups is read here, in blocks).
const AHEAD = 2;
const MAX_GROUP_BYTES = 64 << 20;

// Decoder workers: two cores left to the page and the map's worker, at most four (where the
// decode stops being the upload's bottleneck: the GPU copy takes ~0.1 s of a 272 MB file).
function defaultDecoders() {
  if (typeof Worker !== 'function' || typeof navigator === 'undefined') return 1;
  return Math.min(4, Math.max(1, (navigator.hardwareConcurrency ?? 2) - 2));
}
// dist/parquet_decoder.js beside this bundle (build.mjs), a module worker running rowGroupDecoder.
const spawnDecoder = () => new Worker(new URL('./parquet_decoder.js', import.meta.url), { type: 'module' });

// Row groups k, k + count, k + 2·count, ... go to decoder k; the reader takes the groups in order
// and gives a decoder a credit back as it finishes one of its groups. Errors surface at their
// group's turn with the message the serial reader gives (the row named from the group's first row).
async function* parallelPointBlocks(table, columns, d, file, rows, count, spawn) {
  const sizes = table.groupRows, G = sizes.length;
  const row0 = [];
  for (let g = 0, r = 0; g < G; r += sizes[g++]) row0.push(r);
  const chans = sizes.map(() => ({ items: [], done: false, error: null, wake: null }));
  const settle = (c) => { const w = c.wake; c.wake = null; w?.(); };
  const workers = [];
  try {
    for (let k = 0; k < count; k++) {
      const w = spawn();
      w.onmessage = (e) => {
        const m = e.data, c = chans[m.group];
        if (m.type === 'block') c.items.push(m.block);
        else { c.done = true; if (m.type === 'error') c.error = m; }
        settle(c);
      };
      w.onerror = (e) => {
        e.preventDefault?.();
        for (let g = k; g < G; g += count) {
          const c = chans[g];
          if (c.done) continue;
          c.done = true;
          c.error = { kind: 'io', message: `${file}: a Parquet decoder worker failed (${e.message ?? e}); reload the page` };
          settle(c);
        }
      };
      const mine = [];
      for (let g = k; g < G; g += count) mine.push({ group: g, row0: row0[g] });
      w.postMessage({ type: 'start', blob: table.blob, file, columns, d, rows, groups: mine, ahead: AHEAD });
      workers.push(w);
    }
    let row = 0;
    for (let g = 0; g < G; g++) {
      const c = chans[g];
      for (;;) {
        while (c.items.length) {
          const b = c.items.shift();
          row += b.length / d;
          yield b;
        }
        if (c.done) break;
        await new Promise((ok) => { c.wake = ok; });
      }
      if (c.error) throw new TableError(c.error.kind, c.error.message);
      workers[g % count].postMessage({ type: 'next' });
    }
    if (row !== table.n) throw truncated(file, row, table.n);
  } finally {
    for (const w of workers) w.terminate();
  }
}

// A decoder worker's message handler (parquet_decoder.js; tests run it in-process): 'start' gives it
// the file (a Blob: not copied), the columns and its row groups; it decodes them in order as
// `post({ type: 'block', group, block }, [transfer])` messages then `{ type: 'done', group }`, or one
// `{ type: 'error', group, kind, message }`, at most `ahead` groups before a 'next' comes back.
export function rowGroupDecoder(post) {
  let credit = 0, wake = null;
  return async (m) => {
    if (m.type === 'next') { credit++; const w = wake; wake = null; w?.(); return; }
    if (m.type !== 'start') return;
    credit = m.ahead;
    let table;
    try {
      await ensureParquet();
      table = await openParquet(m.blob, m.file);
    } catch (e) {
      post({ type: 'error', group: m.groups[0].group, kind: e.kind ?? 'io', message: e.message ?? String(e) });
      return;
    }
    for (const { group, row0 } of m.groups) {
      while (credit <= 0) await new Promise((ok) => { wake = ok; });
      credit--;
      try {
        let row = row0;
        for await (const b of table.batches(m.columns, m.rows, [group])) {
          if (b.numRows === 0) continue;
          const block = batchPoints(b, m.columns, m.d, row, m.file);
          row += b.numRows;
          post({ type: 'block', group, block }, [block.buffer]);
        }
        post({ type: 'done', group });
      } catch (e) {
        post({ type: 'error', group, kind: e.kind ?? 'io', message: e.message ?? String(e) });
        return;
      }
    }
  };
}

// ---- labels -------------------------------------------------------------------------------------

// The label column's values (strings or numbers, for hover text) and categories: the TOP_LABELS
// commonest values, the rest as "other" (code TOP_LABELS).
export async function readLabels(table, column, file) {
  const values = new Array(table.n);
  let i = 0;
  for await (const b of table.batches([column], 65536)) {
    const v = b.getChild(column);
    for (let k = 0; k < v.length; k++) {
      const x = v.get(k);
      values[i++] = x == null ? null : typeof x === 'bigint' ? Number(x) : x;
    }
  }
  if (i !== table.n) throw new TableError('io', `${file}: label column '${column}': ${i} rows where the file says ${table.n}`);
  const counts = new Map();
  for (const x of values) counts.set(x, (counts.get(x) ?? 0) + 1);
  const top = [...counts.entries()].sort((a, b) => b[1] - a[1] || (String(a[0]) < String(b[0]) ? -1 : 1)).slice(0, TOP_LABELS);
  const code = new Map(top.map(([v], k) => [v, k]));
  const codes = new Int32Array(table.n);
  let other = 0;
  for (let k = 0; k < values.length; k++) {
    const c = code.get(values[k]);
    if (c === undefined) { codes[k] = TOP_LABELS; other++; } else codes[k] = c;
  }
  const names = top.map(([v]) => (v === null ? '(null)' : String(v)));
  const tally = top.map(([, c]) => c);
  if (other) { names.push(`other (${counts.size - top.length} values)`); tally.push(other); }
  return { values, codes, names, counts: tally };
}

// ---- writing ------------------------------------------------------------------------------------

// The map as Parquet bytes: x, y (float32), id (int64 row number), then the label column (if any)
// under its own name, as surfgrad map -o NAME.parquet --keep LABEL writes it.
export async function mapToParquet(embedding, n, label) {
  await ensureParquet();
  const x = new Float32Array(n), y = new Float32Array(n), id = new BigInt64Array(n);
  for (let i = 0; i < n; i++) { x[i] = embedding[2 * i]; y[i] = embedding[2 * i + 1]; id[i] = BigInt(i); }
  const cols = { x: makeVector(x), y: makeVector(y), id: makeVector(id) };
  if (label && !(label.name in cols)) {
    const numeric = label.values.every((v) => v === null || typeof v === 'number');
    const ints = numeric && label.values.every((v) => v !== null && Number.isInteger(v) && Math.abs(v) < 2 ** 31);
    cols[label.name] = ints ? makeVector(Int32Array.from(label.values))
      : numeric ? makeVector(Float64Array.from(label.values, (v) => (v === null ? NaN : v)))
      : vectorFromArray(label.values.map((v) => (v === null ? null : String(v))), new Utf8());
  }
  const ipc = tableToIPC(new Table(cols), 'stream');
  const props = new WriterPropertiesBuilder().setCompression(Compression.SNAPPY).setMaxRowGroupSize(1 << 17).build();
  return writeParquet(WasmTable.fromIPCStream(ipc), props);
}
