// The map view: regl-scatterplot (WebGL) with categorical colours, a legend and a hover tooltip.
import createScatterplot from 'regl-scatterplot';

// 20 categorical colours: Tableau 10, then their lighter partners. More labels than this cycle.
export const PALETTE = [
  '#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#7f7f7f',
  '#a0cbe8', '#ffbe7d', '#8c564b', '#86bcb6', '#8cd17d', '#b6992d', '#d4a6c8', '#d37295', '#17becf', '#bcbd22',
];
export const UNLABELLED = '#4e79a7';
// A table's labels past its 20 commonest values ("other").
export const OTHER = '#c8c8c8';
export const BACKGROUND = '#ffffff';

// Categories from integer labels: { codes (0..K-1 per point), values (label of each code), counts }.
export function categorise(labels) {
  const values = [...new Set(labels)].sort((a, b) => a - b);
  const code = new Map(values.map((v, i) => [v, i]));
  const codes = new Float32Array(labels.length);
  const counts = new Array(values.length).fill(0);
  for (let i = 0; i < labels.length; i++) { codes[i] = code.get(labels[i]); counts[codes[i]]++; }
  return { codes, values, counts };
}

// Embedding (n×2 interleaved) → x, y in [-0.92, 0.92], centred, aspect ratio kept. (The worker
// does this for the layouts it posts: map_worker.js scaleForPlot.)
export function normalise(embedding, n) {
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (let i = 0; i < n; i++) {
    const x = embedding[2 * i], y = embedding[2 * i + 1];
    if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
    if (x < x0) x0 = x; if (x > x1) x1 = x; if (y < y0) y0 = y; if (y > y1) y1 = y;
  }
  const cx = (x0 + x1) / 2 || 0, cy = (y0 + y1) / 2 || 0;
  const s = 1.84 / (Math.max(x1 - x0, y1 - y0) || 1);
  const x = new Float32Array(n), y = new Float32Array(n);
  for (let i = 0; i < n; i++) { x[i] = (embedding[2 * i] - cx) * s; y[i] = (embedding[2 * i + 1] - cy) * s; }
  return { x, y };
}

export class MapView {
  constructor(canvas, { tooltip, legend }) {
    this.canvas = canvas;
    this.tooltip = tooltip;
    this.legend = legend;
    this.cats = null;
    this.labels = null;
    this.n = 0;
    this.pending = null;
    this.drawing = null;
    this.drawMs = 0;
    this.mouse = [0, 0];
    this.plot = createScatterplot({
      canvas, width: 'auto', height: 'auto',
      backgroundColor: BACKGROUND,
      pointSize: 3, pointSizeSelected: 4, pointOutlineWidth: 1,
      opacity: 0.85,
      pointColor: UNLABELLED,
      pointColorHover: '#111111',
      lassoColor: '#3b6fb6',
      showReticle: true, reticleColor: [0.2, 0.2, 0.2, 0.25],
      // The hover index (a k-d tree, rebuilt for each layout drawn) is built in regl-scatterplot's
      // own worker: at 1M points it would hold the page's thread for ~0.5 s a layout.
      spatialIndexUseWorker: true,
    });
    this.rowText = null; // (i) => Promise<string | null>: a table's label text of row i
    this.describe = null; // (k) => { i, label, code } of drawn point k: a tiled map's (tiles.js)
    // clear() gives regl-scatterplot no points, which its index worker answers with a rejected
    // promise nobody can catch ('Invalid point data'): not an error of the page's.
    window.addEventListener('unhandledrejection', (e) => {
      if (e.reason?.message === 'Invalid point data' && this.n === 0) { e.preventDefault(); e.stopImmediatePropagation(); }
    });
    canvas.addEventListener('pointermove', (e) => {
      const r = canvas.getBoundingClientRect();
      this.mouse = [e.clientX - r.left, e.clientY - r.top];
      this.placeTooltip();
    });
    canvas.addEventListener('wheel', () => { tooltip.hidden = true; }, { passive: true });
    this.plot.subscribe('pointOver', (i) => this.showTooltip(i));
    this.plot.subscribe('pointOut', () => { tooltip.hidden = true; this.hovered = -1; });
    // A view change (drag, a programmatic zoom, a tiled map's zoomTo) moves the hovered point from
    // under the mouse: end the hover, or its tooltip stays up and its reticle (a line across the
    // plot) marks a point that is no longer there.
    this.plot.subscribe('view', () => this.unhover());
  }

  // Ends a hover: regl-scatterplot drops the hovered point (its reticle; nothing to redraw when
  // none is hovered) and sends pointOut.
  unhover() {
    this.plot.hover(-1);
    this.tooltip.hidden = true;
    this.hovered = -1;
  }

  // Integer labels for the points (or null): colours and legend follow.
  setLabels(labels) {
    this.labels = labels;
    this.setCats(labels ? categorise(labels) : null);
  }

  // A table's label categories from the worker: { codes: Int32Array (n), names, counts }; the last
  // name may be "other (…)" (everything past the 20 commonest values), drawn grey.
  setCategories(c) {
    this.labels = null;
    this.setCats(c ? { codes: Float32Array.from(c.codes), values: c.names, counts: c.counts, other: /^other \(/.test(c.names.at(-1) ?? '') } : null);
  }

  setCats(cats) {
    this.cats = cats;
    this.filtered = null;
    this.plot.unfilter?.();
    this.plot.set({ pointColor: this.colours(), colorBy: this.cats ? 'valueA' : null });
    this.renderLegend();
  }

  // The colours in use, for tests: one per label code.
  colours() {
    if (!this.cats) return [UNLABELLED];
    return this.cats.values.map((_, i) => (this.cats.other && i === this.cats.values.length - 1 ? OTHER : PALETTE[i % PALETTE.length]));
  }

  renderLegend() {
    const el = this.legend;
    el.replaceChildren();
    if (!this.cats) { el.hidden = true; return; }
    el.hidden = false;
    const shown = this.cats.values.length > 40 ? 40 : this.cats.values.length;
    const colours = this.colours();
    for (let i = 0; i < shown; i++) {
      const row = document.createElement('div');
      row.className = 'legend-row';
      const sw = document.createElement('span');
      sw.className = 'swatch';
      sw.style.background = colours[i];
      const name = document.createElement('span');
      name.textContent = String(this.cats.values[i]);
      const count = document.createElement('span');
      count.className = 'count';
      count.textContent = this.cats.counts[i].toLocaleString('en-US');
      row.append(sw, name, count);
      row.title = 'Click to show only this label; click again to show all';
      row.onclick = () => this.toggleFilter(i, row);
      el.append(row);
    }
    if (shown < this.cats.values.length) {
      const more = document.createElement('div');
      more.className = 'legend-more';
      more.textContent = `+${this.cats.values.length - shown} more labels`;
      el.append(more);
    }
  }

  // Draws a layout: { x, y } already scaled to [-1, 1] (the worker's scaleForPlot), or an
  // embedding (n×2 interleaved) scaled here. Calls during a draw coalesce: only the newest is
  // drawn, and after each draw the page idles as long as that draw took before the next, so live
  // updates never take more than about half of the main thread; the plot is made once and only
  // given new points. (regl-scatterplot renders into a shared WebGL canvas and copies it with
  // drawImage: cheap on a GPU, ~50 ms per frame on SwiftShader.)
  async show(layout, n) {
    this.pending = layout.x ? { xy: layout, n: layout.x.length, stride: layout.stride ?? 1, index: layout.spatialIndex } : { embedding: layout, n, stride: 1 };
    if (this.drawing) return this.drawing;
    this.drawing = this.drawLoop();
    return this.drawing;
  }

  async drawLoop() {
    try {
      while (this.pending) {
        const t0 = performance.now();
        const { embedding: e, xy, n: m, stride, index } = this.pending;
        this.pending = null;
        if (!m) continue; // (regl-scatterplot's index worker refuses no points)
        const { x, y } = xy ?? normalise(e, m);
        const pts = { x, y };
        // An intermediate layout of a large map: every stride-th point (map_worker.js LIVE_POINTS).
        this.stride = stride;
        // (A tiled map's points come with their own label codes: tiles.js.)
        const codes = xy?.z ?? (this.cats && (stride > 1 ? this.sampleCodes(stride, m) : this.cats.codes));
        if (codes && codes.length === m) pts.z = codes;
        if (m !== this.n) this.plot.set({ pointSize: m <= 5000 ? 4 : m <= 50000 ? 3 : m <= 500000 ? 2 : 1 });
        this.n = m;
        this.unhover(); // (the hovered index is of the points being replaced)
        // index: the layout's k-d tree built off this thread (map_worker.js), else regl-scatterplot
        // copies the points to its own index worker from here.
        await this.plot.draw(pts, { zDataType: 'categorical', preventFilterReset: true, spatialIndex: index });
        this.drawMs = performance.now() - t0;
        if (this.pending) await new Promise((ok) => setTimeout(ok, Math.min(this.drawMs, 500)));
      }
    } finally {
      this.drawing = null;
    }
  }

  // The label codes of every stride-th point (m of them), kept for the next layout.
  sampleCodes(stride, m) {
    if (this.sampled?.stride === stride && this.sampled.cats === this.cats && this.sampled.codes.length === m) return this.sampled.codes;
    const codes = new Float32Array(m);
    for (let k = 0; k < m; k++) codes[k] = this.cats.codes[k * stride];
    this.sampled = { stride, cats: this.cats, codes };
    return codes;
  }

  // Shows only the points of one label code (or all again).
  toggleFilter(code, row) {
    const rows = [...this.legend.querySelectorAll('.legend-row')];
    if (this.filtered === code || !this.cats || this.cats.codes.length !== this.n) {
      this.filtered = null;
      this.plot.unfilter();
      rows.forEach((r) => r.classList.remove('off', 'on'));
      return;
    }
    this.filtered = code;
    const idx = [];
    for (let i = 0; i < this.n; i++) if (this.cats.codes[i] === code) idx.push(i);
    this.plot.filter(idx);
    rows.forEach((r) => { r.classList.toggle('on', r === row); r.classList.toggle('off', r !== row); });
  }

  clear() { this.n = 0; this.filtered = null; this.plot.clear(); }
  resetView() { this.plot.reset(); }

  showTooltip(k) {
    if (this.describe) { this.showDescribed(this.describe(k)); return; }
    const i = k * (this.stride ?? 1); // the point's own index (a sampled layout draws every stride-th)
    const label = this.labels ? `label ${this.labels[i]}` : this.cats ? this.cats.values[this.cats.codes[i]] : 'no label';
    this.tooltip.replaceChildren();
    const a = document.createElement('b');
    a.textContent = `#${i}`;
    const b = document.createElement('span');
    b.textContent = label;
    if (this.cats) {
      const sw = document.createElement('span');
      sw.className = 'swatch';
      sw.style.background = this.colours()[this.cats.codes[i]];
      b.prepend(sw);
    }
    this.tooltip.append(a, b);
    // A table's row: its label column's own text (the worker holds it), when the mouse is still there.
    if (this.rowText) {
      this.hovered = i;
      this.rowText(i).then((text) => {
        if (this.hovered !== i || this.tooltip.hidden || text == null) return;
        b.lastChild.textContent = text;
      });
    }
    this.tooltip.hidden = false;
    this.placeTooltip();
  }

  // A tiled map's point (tiles.js describe): { i: its input row, label: text, code }.
  showDescribed(d) {
    if (!d) return;
    const a = document.createElement('b');
    a.textContent = `#${d.i}`;
    const b = document.createElement('span');
    b.textContent = d.label;
    if (this.cats && d.code != null && d.code >= 0) {
      const sw = document.createElement('span');
      sw.className = 'swatch';
      sw.style.background = this.colours()[d.code % this.colours().length];
      b.prepend(sw);
    }
    this.tooltip.replaceChildren(a, b);
    this.tooltip.hidden = false;
    this.placeTooltip();
  }

  placeTooltip() {
    if (this.tooltip.hidden) return;
    this.tooltip.style.transform = `translate(${this.mouse[0] + 14}px, ${this.mouse[1] + 14}px)`;
  }
}
