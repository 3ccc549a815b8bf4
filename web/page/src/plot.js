// The map view: regl-scatterplot (WebGL) with categorical colours, a legend and a hover tooltip.
import createScatterplot from 'regl-scatterplot';
import createKDBushClass from 'regl-scatterplot/src/kdbush-class.js';
import { PointsLayer } from './points_layer.js';

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

// The hover index a worker built for a layout (regl-scatterplot's createSpatialIndex: KDBush 4).
const KDBush = createKDBushClass();
// How near (CSS px) the mouse must come to a point to hover it.
const HOVER_PX = 8;

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
    this.hovered = null; // { id, k } of the point under the mouse
    this.sets = new Map(); // id → { x, y, code, stride, index, bounds }: what is drawn, for hover
    this.onFrame = null; // (ms) after each render of the points, for benchmarks
    // regl-scatterplot keeps the camera (zoom and pan by dom-2d-camera, ticked in its frame loop)
    // and is given no points, so it renders nothing (no copy of an empty frame to its canvas every
    // time the view moves); the map's points are the layer's (points_layer.js says why).
    this.plot = createScatterplot({
      canvas, width: 'auto', height: 'auto',
      backgroundColor: BACKGROUND,
      showReticle: false,
      keyMap: {}, // no lasso or rotation (the layer's points are not regl-scatterplot's to select)
    });
    const layerCanvas = document.createElement('canvas');
    layerCanvas.className = 'points-layer';
    canvas.after(layerCanvas);
    this.layer = new PointsLayer(layerCanvas, { getView: () => this.plot.get('cameraView'), opacity: 0.85 });
    this.layer.onFrame = (ms) => this.onFrame?.(ms);
    this.rowText = null; // (i) => Promise<string | null>: a table's label text of row i
    this.describe = null; // (id, k) => { i, label, code } of point k of batch id: a tiled map's (tiles.js)
    canvas.addEventListener('pointermove', (e) => {
      const r = canvas.getBoundingClientRect();
      this.mouse = [e.clientX - r.left, e.clientY - r.top];
      this.placeTooltip();
      if (e.buttons) return; // (dragging: the view moves)
      if (!this.hoverQueued) { this.hoverQueued = true; requestAnimationFrame(() => { this.hoverQueued = false; this.hoverAt(...this.mouse); }); }
    });
    canvas.addEventListener('pointerleave', () => this.unhover());
    canvas.addEventListener('wheel', () => { tooltip.hidden = true; }, { passive: true });
    // The points move with the camera in the same frame: after regl-scatterplot's frame callback
    // has ticked the camera, this one compares the view with the last and redraws the points. A view
    // change (drag, a programmatic zoom, a tiled map's zoomTo) also moves the hovered point from
    // under the mouse: the hover ends, or its tooltip stays up over a point no longer there.
    this.viewListeners = new Set();
    const last = new Float32Array(16);
    const tick = () => {
      const v = this.plot.get('cameraView');
      if (v && v.some((e, i) => e !== last[i])) {
        last.set(v);
        this.unhover(false);
        this.layer.render();
        for (const f of this.viewListeners) f();
      }
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  }

  // Calls f after every view change (in the frame it is drawn); returns the unsubscribe.
  onView(f) { this.viewListeners.add(f); return () => this.viewListeners.delete(f); }

  // Zooms to a rectangle of plot coordinates { x, y, width, height } (regl-scatterplot's
  // zoomToArea without its promise, which resolves on a draw that never comes here).
  zoomToArea({ x, y, width, height }) {
    const aspect = (this.canvas.clientWidth || 1) / (this.canvas.clientHeight || 1);
    const distance = height * aspect >= width ? height / 2 : width / 2 / aspect;
    this.plot.get('camera').lookAt([x + width / 2, y + height / 2], distance);
  }

  // Ends a hover (render: redraw now, without the hovered point's mark).
  unhover(render = true) {
    const had = this.layer.hover;
    this.layer.hover = null;
    this.tooltip.hidden = true;
    this.hovered = null;
    if (had && render) this.layer.requestRender();
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
    this.setFilter(null);
    this.layer.setColours(this.colours());
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
      if (this.filtered === i) row.classList.add('on');
      else if (this.filtered != null) row.classList.add('off');
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
  // drawn next. The layer copies the points to the GPU in slices between frames (points_layer.js),
  // so a new layout never holds the page's thread; the one drawn stays until it is replaced whole.
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
        const { x, y } = xy ?? normalise(e, m);
        // An intermediate layout of a large map: every stride-th point (map_worker.js LIVE_POINTS).
        const codes = this.cats && (stride > 1 ? this.sampleCodes(stride, m) : this.cats.codes);
        const code = codes && codes.length === m ? codes : null;
        this.unhover(false); // (the hovered index is of the points being replaced)
        // index: the layout's k-d tree built off this thread (map_worker.js postIndex), for hover.
        let kd = null;
        try { kd = index ? KDBush.from(index) : null; } catch { kd = null; }
        if (!(await this.layer.add('layout', { x, y, code }))) continue; // (cleared meanwhile)
        this.sets.set('layout', { x, y, code, stride, index: kd });
        this.n = m;
        this.stride = stride;
        this.sizePoints();
        this.drawMs = performance.now() - t0;
        if (this.pending) await new Promise((ok) => setTimeout(ok, 0));
      }
    } finally {
      this.drawing = null;
    }
  }

  // A tiled map's tile (tiles.js): its own batch of points, added beside the others; { x, y, z }
  // in plot coordinates with label codes (z, or null), and bounds [x0, y0, x1, y1] for hover.
  async addPoints(id, { x, y, z, bounds }) {
    const ok = await this.layer.add(id, { x, y, code: z ?? null });
    if (ok) { this.sets.set(id, { x, y, code: z ?? null, stride: 1, bounds }); this.sizePoints(); }
    return ok;
  }

  removePoints(id) {
    this.layer.remove(id);
    this.sets.delete(id);
    if (this.hovered?.id === id) this.unhover();
    this.sizePoints();
  }

  // Point size by how many are drawn (as regl-scatterplot was set: 4 px to 5,000 points, 1 px past 500,000).
  sizePoints() {
    const m = this.layer.count;
    this.layer.pointSize = m <= 5000 ? 4 : m <= 50000 ? 3 : m <= 500000 ? 2 : 1;
    this.layer.requestRender();
  }

  // The label codes of every stride-th point (m of them), kept for the next layout.
  sampleCodes(stride, m) {
    if (this.sampled?.stride === stride && this.sampled.cats === this.cats && this.sampled.codes.length === m) return this.sampled.codes;
    const codes = new Float32Array(m);
    for (let k = 0; k < m; k++) codes[k] = this.cats.codes[k * stride];
    this.sampled = { stride, cats: this.cats, codes };
    return codes;
  }

  // Shows only the points of one label code (or all again): the layer skips the others in its
  // vertex shader, so a filter costs nothing per point here.
  toggleFilter(code) {
    this.setFilter(this.filtered === code || !this.cats ? null : code);
  }

  setFilter(code) {
    this.filtered = code;
    this.layer.only = code ?? -1;
    if (this.hovered && code != null && this.codeOf(this.hovered) !== code) this.unhover();
    this.layer.requestRender();
    for (const [i, r] of [...this.legend.querySelectorAll('.legend-row')].entries()) {
      r.classList.toggle('on', code != null && i === code);
      r.classList.toggle('off', code != null && i !== code);
    }
  }

  codeOf({ id, k }) { const s = this.sets.get(id); return s?.code ? s.code[k] : 0; }

  clear() {
    this.n = 0;
    this.unhover();
    this.layer.clear();
    this.sets.clear();
    this.pending = null;
    this.setFilter(null);
  }

  resetView() { this.plot.reset(); }

  // The camera's view matrix entries: plot coordinates → NDC is P·V with P = diag(1/aspect, 1).
  camera() {
    const v = this.plot.get('cameraView');
    const w = this.canvas.clientWidth || 1, h = this.canvas.clientHeight || 1;
    return { a: v[0], b: v[1], c: v[4], d: v[5], e: v[12], f: v[13], w, h, aspect: w / h };
  }

  // A point of the plot's coordinates → CSS px in the canvas.
  toScreen(x, y) {
    const { a, b, c, d, e, f, w, h, aspect } = this.camera();
    const nx = (a * x + c * y + e) / aspect, ny = b * x + d * y + f;
    return [(nx + 1) * w / 2, (1 - ny) * h / 2];
  }

  // CSS px in the canvas → the plot's coordinates, and how many plot units one px is.
  fromScreen(px, py) {
    const { a, b, c, d, e, f, w, h, aspect } = this.camera();
    const X = ((2 * px) / w - 1) * aspect - e, Y = 1 - (2 * py) / h - f;
    const det = a * d - b * c || 1e-12;
    return { x: (d * X - c * Y) / det, y: (-b * X + a * Y) / det, unit: 2 / h / Math.sqrt(Math.abs(det)) };
  }

  // For tests: where point k of batch id (the first drawn batch by default) is on the canvas.
  screenPosition(k = 0, id = this.layer.order[0]) {
    const s = this.sets.get(id);
    return s ? this.toScreen(s.x[k], s.y[k]) : null;
  }

  // The drawn point nearest the mouse within HOVER_PX: the layout's k-d tree where the worker built
  // one, else a scan of the batches near the mouse (a tile's bounds skip tiles elsewhere).
  nearest(px, py) {
    const { x, y, unit } = this.fromScreen(px, py);
    const r = HOVER_PX * unit;
    let best = null, bd = r * r;
    const only = this.filtered;
    for (const id of this.layer.order) {
      const s = this.sets.get(id);
      if (!s) continue;
      const b = s.bounds;
      if (b && (x < b[0] - r || x > b[2] + r || y < b[1] - r || y > b[3] + r)) continue;
      const consider = (k) => {
        if (only != null && (s.code ? s.code[k] : 0) !== only) return;
        const dx = s.x[k] - x, dy = s.y[k] - y, dd = dx * dx + dy * dy;
        if (dd <= bd) { bd = dd; best = { id, k }; }
      };
      if (s.index) for (const k of s.index.within(x, y, r)) consider(k);
      else for (let k = 0; k < s.x.length; k++) if (Math.abs(s.x[k] - x) <= r && Math.abs(s.y[k] - y) <= r) consider(k);
    }
    return best;
  }

  hoverAt(px, py) {
    const p = this.nearest(px, py);
    if (!p) { if (this.hovered) this.unhover(); return; }
    if (this.hovered && this.hovered.id === p.id && this.hovered.k === p.k) return;
    this.hovered = p;
    const s = this.sets.get(p.id);
    this.layer.hover = [s.x[p.k], s.y[p.k]];
    this.layer.requestRender();
    this.showTooltip(p);
  }

  showTooltip({ id, k }) {
    if (this.describe) { this.showDescribed(this.describe(id, k)); return; }
    const i = k * (this.sets.get(id)?.stride ?? 1); // the point's own index (a sampled layout draws every stride-th)
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
      const h = this.hovered;
      this.rowText(i).then((text) => {
        if (this.hovered !== h || this.tooltip.hidden || text == null) return;
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
