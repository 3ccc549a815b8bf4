// regl-scatterplot's module makes a BroadcastChannel through `window` as it loads; a worker has
// no `window`, so spatial_index.js (loaded in the map worker) imports this first.
if (typeof globalThis.window === 'undefined') globalThis.window = globalThis;
