// Pipelines compiled ahead in the browser (issues 32 and 35; web/src/prewarm_web.cpp): two fresh
// pages map the same built-in points by t-SNE, one with init({prewarm: true}), one with false.
// Checks that
//  - the two maps are the same bytes (the same pipelines, whenever they were compiled);
//  - with prewarming, the map created no pipeline synchronously (createComputePipeline, which
//    Chromium compiles on the GPU process's main thread and so stops the page's frames), started
//    its kernels ahead (pipelines.prewarmed > 0), and built fewer at first use than without;
//  - the tensor ops' kernels (the input checks', PCA's, the start's, reductions, the built-in
//    points' generator: op_prewarm.hpp's lists, run in wasm too) were started ahead as well: at
//    most one built at first use with prewarming (pipelines.atUse names them), against every one
//    without (issue 35: each was a round trip on a second page load's critical path);
//  - a kernel the compiler rejects reports the compiler's message naming it at its first use,
//    prewarmed or not.
//   node web/tests/prewarm_check.mjs        (~15 s on SwiftShader)
import { launch, openPage } from '../tools/chromium.mjs';
import { serve } from '../tools/serve.mjs';

// A small t-SNE of the built-in clusters (as points_suite.js's builtinCase, with a few
// iterations so the layout's kernels run): the page's path (builtinPoints → sg_map_check → held).
const n = 300;
const options = { seed: 1, iterations: 20, exaggerationIterations: 10, perplexity: 5, pcaComponents: 0 };

async function mapIn(browser, url, prewarm) {
  const page = await openPage(browser, `${url}/tests/prewarm.html`, { prefix: `[prewarm ${prewarm}]` });
  try {
    return await page.evaluate(async ([prewarm, n, options]) => {
      const sg = await import('../package/surfgrad.js');
      const { testing } = await import('../package/tensor.js');
      await sg.init({ prewarm });
      const before = sg.stats();
      const t0 = performance.now();
      const r = await sg.tsne(sg.builtinPoints(n), options);
      const seconds = (performance.now() - t0) / 1000;
      const after = sg.stats();
      const calls = (name) => (after.webgpuCalls[name] || 0) - (before.webgpuCalls[name] || 0);
      const broken = {};
      for (const prewarmed of prewarm ? [true, false] : [false]) {
        try {
          await testing.brokenKernel(prewarmed);
          broken[prewarmed] = 'no error';
        } catch (e) {
          broken[prewarmed] = `${e.kind}: ${e.message}`;
        }
      }
      return { embedding: Array.from(r.embedding), seconds, pipelines: after.pipelines,
               sync: calls('wgpuDeviceCreateComputePipeline'), async: calls('wgpuDeviceCreateComputePipelineAsync'),
               broken };
    }, [prewarm, n, options]);
  } finally {
    await page.close();
  }
}

// The tensor ops' kernels among those built at first use (pipelines.atUse: the profile's labels):
// all but the map layer's own files (kNN, t-SNE, UMAP, the graph's edges).
const tensorOps = (p) => (p.atUse || []).filter((name) => !/^(knn_|tsne_|umap_|incoming_edges|in_edge_weights)/.test(name));

const failures = [];
function check(name, ok, detail) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}: ${detail}`);
  if (!ok) failures.push(name);
}

const server = await serve({ port: 0, quiet: true });
const browser = await launch();
try {
  const on = await mapIn(browser, server.url, true);
  const off = await mapIn(browser, server.url, false);
  for (const [name, r] of [['prewarm on', on], ['prewarm off', off]])
    console.log(`${name}: ${r.seconds.toFixed(1)} s, pipelines ${JSON.stringify(r.pipelines)}, created sync ${r.sync}, async ${r.async}`);
  const diff = on.embedding.findIndex((v, i) => !Object.is(v, off.embedding[i]));
  check('the map with prewarming is the same bytes as without', on.embedding.length === 2 * n && diff < 0
        && off.embedding.length === on.embedding.length,
        diff < 0 ? `${n} points identical` : `index ${diff}: ${on.embedding[diff]} vs ${off.embedding[diff]}`);
  check('with prewarming, no pipeline of the map was created synchronously', on.sync === 0 && on.async > 0,
        `${on.sync} synchronous, ${on.async} asynchronous`);
  check('without, none either (every first use compiles asynchronously)', off.sync === 0 && off.async > 0,
        `${off.sync} synchronous, ${off.async} asynchronous`);
  check('the map\'s kernels were started ahead (prewarmed), and fewer built at first use than without',
        on.pipelines.prewarmed > 0 && off.pipelines.prewarmed === 0 && on.pipelines.builtAtUse < off.pipelines.builtAtUse,
        `prewarmed ${on.pipelines.prewarmed} vs ${off.pipelines.prewarmed}; built at first use ${on.pipelines.builtAtUse} vs ${off.pipelines.builtAtUse}`);
  const [opsOn, opsOff] = [tensorOps(on.pipelines), tensorOps(off.pipelines)];
  check('the tensor ops\' kernels were started ahead too: at most one built at first use, fewer than without',
        opsOn.length <= 1 && opsOff.length > opsOn.length && on.pipelines.builtAtUse === (on.pipelines.atUse || []).length,
        `${opsOn.length} vs ${opsOff.length} built at first use${opsOn.length ? ` (${opsOn.join('; ')})` : ''}`);
  // (the kernel's name, its key, the compiler's message: the native path's words)
  const named = /^shader: kernel 'broken_for_tests' \(broken_for_tests\|\d+\) was rejected by .*no_such_function_for_tests/s;
  for (const [what, message] of [['prewarmed', on.broken.true], ['at first use', on.broken.false],
                                 ['at first use, prewarming off', off.broken.false]])
    check(`a kernel the compiler rejects (${what}) reports it at its first use, named`, named.test(message || ''),
          (message || '').split('\n').slice(0, 2).join(' / ').slice(0, 200));
} finally {
  await browser.close();
  await server.close();
}
if (failures.length) {
  console.log(`prewarm check: ${failures.length} failed`);
  process.exit(1);
}
console.log('prewarm check: all passed');
