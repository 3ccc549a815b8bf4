// After regl-scatterplot's module has loaded in a worker: no `window` there again (other code in
// the worker tells a page from a worker by it).
if (globalThis.__windowShimmed) {
  delete globalThis.window;
  delete globalThis.__windowShimmed;
}
