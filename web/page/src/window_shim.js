// regl-scatterplot's module makes a BroadcastChannel through `window` as it loads; a worker has
// no `window`, so spatial_index.js (loaded in the map worker) imports this first, and takes the
// stand-in away again once the module has loaded (window_unshim.js).
if (typeof globalThis.window === 'undefined') {
  globalThis.window = globalThis;
  globalThis.__windowShimmed = true;
}
