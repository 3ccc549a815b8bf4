// A static file server for the browser target: web/ at /, and the test data beside the checkout
// (../shared/data) at /data/. `npm run serve` (or `node web/tools/serve.mjs [--port P]`) serves
// the map page at http://localhost:P/page/. Also imported by the browser tests and benchmarks.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const webRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dataRoot = path.resolve(webRoot, '..', '..', 'shared', 'data');
const types = {
  '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css',
  '.json': 'application/json', '.wasm': 'application/wasm', '.png': 'image/png', '.svg': 'image/svg+xml',
  '.npy': 'application/octet-stream', '.gz': 'application/octet-stream', '.map': 'application/json',
};

// Resolves a URL path inside one of the roots; null for anything that escapes them, and for a
// path that is not valid percent-encoding (decodeURIComponent throws on "/%E0%A4%A": a 404, where
// it once stopped the server).
function resolve(urlPath) {
  let clean;
  try {
    clean = decodeURIComponent(urlPath.split('?')[0]);
  } catch {
    return null;
  }
  const [root, rest] = clean.startsWith('/data/') ? [dataRoot, clean.slice(6)] : [webRoot, clean.slice(1)];
  const file = path.resolve(root, rest);
  if (file !== root && !file.startsWith(root + path.sep)) return null;
  return file;
}

// onRequest(url): called with each request's path (tests count what the page's workers fetched).
export function serve({ port = 8080, host = '127.0.0.1', quiet = false, onRequest = null } = {}) {
  const server = http.createServer((req, res) => {
    onRequest?.(req.url);
    let file = resolve(req.url);
    if (file && fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    if (!file || !fs.existsSync(file)) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found: ' + req.url);
      return;
    }
    const type = types[path.extname(file)] || 'application/octet-stream';
    if (type === 'application/wasm') {
      // Kept by the browser and revalidated at each use (304 while unchanged): V8 keeps a streamed
      // module's compiled code beside the HTTP cache's entry, so a later page load that gets it
      // from the cache compiles less (issue 35's second page load). Everything else: no-store.
      const stat = fs.statSync(file), etag = `"${stat.size.toString(16)}-${Math.floor(stat.mtimeMs).toString(16)}"`;
      const headers = { 'content-type': type, 'cache-control': 'no-cache', etag, 'last-modified': stat.mtime.toUTCString() };
      if (req.headers['if-none-match'] === etag) {
        res.writeHead(304, headers);
        res.end();
        return;
      }
      res.writeHead(200, headers);
    } else {
      res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' });
    }
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => {
      const url = `http://${host}:${server.address().port}`;
      if (!quiet) console.log(`surfgrad web: serving ${webRoot} at ${url}/ (map page: ${url}/page/)`);
      ok({ url, close: () => new Promise((done) => server.close(done)) });
    });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--port');
  await serve({ port: at > 0 ? Number(process.argv[at + 1]) : 8080 });
}
