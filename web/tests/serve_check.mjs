// The static file server (web/tools/serve.mjs) in Node (CI, < 1 s): the map page is served, paths
// that escape web/ and the data folder are not, and a malformed percent-encoding gets a 404 while
// the server keeps answering (it once threw and stopped the process).
//
//   node web/tests/serve_check.mjs
import { serve } from '../tools/serve.mjs';

const server = await serve({ port: 0, quiet: true });
let failed = 0;
const expect = async (urlPath, status) => {
  const res = await fetch(server.url + urlPath);
  await res.arrayBuffer();
  const ok = res.status === status;
  if (!ok) failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${urlPath} -> ${res.status} (want ${status})`);
};
try {
  await expect('/page/', 200);
  await expect('/%E0%A4%A', 404);
  await expect('/page/%', 404);
  await expect('/%2e%2e/%2e%2e/etc/passwd', 404);
  await expect('/data/%2e%2e/%2e%2e/etc/passwd', 404);
  await expect('/page/', 200);  // still serving after the bad requests
} finally {
  await server.close();
}
if (failed) {
  console.error(`serve_check: ${failed} failed`);
  process.exit(1);
}
console.log('serve_check: all passed');
