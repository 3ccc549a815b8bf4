// surfgrad in the browser: the C++ library compiled to WebAssembly (surfgrad.wasm), running its
// WGSL kernels on the page's WebGPU through webgpu_bridge.js.
//
//   import * as surfgrad from './surfgrad.js';
//   const device = await surfgrad.init();                  // adapter, features, limits
//   const { embedding } = await surfgrad.umap(points, d, { nNeighbors: 15, onProgress });
//   const big = await surfgrad.umap(await surfgrad.npyPoints(file));  // streamed in row blocks
//
// Works on the main thread and in a Web Worker (recommended for pages: the work never blocks
// rendering). Needs WebGPU and JSPI (WebAssembly.Suspending; Chromium 137+).
export { SurfgradError, device, init, stats } from './runtime.js';
export { mapOptionSchema, readNpy, tsne, umap } from './maps.js';
export { builtinPoints, npyPoints } from './points.js';
export { Tensor, nn, noGrad, optim, realize, tensor } from './tensor.js';
export { tileFftConv, tileMlp, tileSpd } from './tiles.js';
export { benchMatmul } from './bench.js';
