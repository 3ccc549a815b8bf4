// A worker that decodes row groups of a Parquet file's point columns for tables.js's pointBlocks
// (several at once: parquet-wasm runs on one thread). Bundled by build.mjs into dist/parquet_decoder.js.
import { rowGroupDecoder } from './tables.js';

const handle = rowGroupDecoder((message, transfer) => self.postMessage(message, transfer ?? []));
self.onmessage = (e) => handle(e.data);
