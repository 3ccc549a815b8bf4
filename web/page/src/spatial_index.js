// The hover index (regl-scatterplot's k-d tree, as an ArrayBuffer) of a final layout, built in the
// map worker (bundled to dist/spatial_index.js): given to plot.draw as `spatialIndex`, so the page's
// thread neither builds it nor copies the n points to regl-scatterplot's own index worker (that
// copy, a structured clone of n small arrays, held the page's thread ~0.5 s at 1M points).
// (Imports run in order: the shim, regl-scatterplot, then the shim's removal.)
import './window_shim.js';
import { createSpatialIndex } from 'regl-scatterplot';
import './window_unshim.js';

export { createSpatialIndex };
