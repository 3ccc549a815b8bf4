// The peers off the main thread, the way a page that must stay responsive runs them (embedding-
// atlas's own app computes its UMAP in a worker, embedding.worker.js): the page posts the points
// (transferred), the worker maps them and posts the embedding back. Bundled to dist/peers-worker.js.
import { UMAP } from 'umap-js';
import { createUMAP } from '../node_modules/embedding-atlas/dist/umap.js';
import { seeded, rowsOf, flatten } from './common.js';

const jobs = {
  async 'umap-js'({ points, n, d, seed }) {
    const umap = new UMAP({ nNeighbors: 15, minDist: 0.1, nComponents: 2, random: seeded(seed) });
    return { embedding: flatten(umap.fit(rowsOf(points, n, d))), detail: {} };
  },
  async 'embedding-atlas'({ points, n, d, seed }) {
    const umap = await createUMAP(n, d, 2, points, { metric: 'euclidean', nNeighbors: 15, minDist: 0.1, seed });
    await umap.run();
    const embedding = new Float32Array(umap.embedding);
    const epochs = umap.epoch;
    umap.destroy();
    return { embedding, detail: { epochs } };
  },
};

self.onmessage = async (e) => {
  try {
    const t0 = performance.now();
    const r = await jobs[e.data.tool](e.data);
    r.detail.workerSeconds = (performance.now() - t0) / 1000;
    self.postMessage(r, [r.embedding.buffer]);
  } catch (err) {
    self.postMessage({ error: String(err && err.message || err) });
  }
};
