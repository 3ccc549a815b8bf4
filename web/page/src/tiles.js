// A tiled map (`surfgrad map … --tiles DIR`, docs/tiles.md) drawn progressively: manifest.json
// first (the whole tree and the bounds), then the root tile (a uniform sample of the whole map),
// then, as the view pans and zooms, the tiles under it that the view needs: parents before
// children, the largest on screen first, a few fetches at once, fetches that left the view
// cancelled, up to a budget of points drawn. Decoded tiles stay in a small LRU.
import { tableFromIPC } from 'apache-arrow';

const FORMAT = 'surfgrad-tiles';
const VERSION = 1;
// A tile's children are wanted while its own points are sparser on screen than this: one point per
// 24 px² (about 5 px apart), where the plot's 2-3 px points no longer cover the area they sample.
// (A small map is sparse at any zoom, so all of it loads at once; ?tileDensity= lowers it for tests.)
const DENSITY = 1 / 24;

const fail = (message, kind = 'value') => { throw { kind, name: 'TilesError', message }; };

// The manifest's address from ?tiles=: a folder (…/tiles or …/tiles/) or …/manifest.json.
export function manifestUrl(url) {
  const u = new URL(url, location.href);
  if (!/\/manifest\.json$/.test(u.pathname)) u.pathname = u.pathname.replace(/\/?$/, '/manifest.json');
  return u;
}

async function fetchOk(url, signal) {
  let res;
  try { res = await fetch(url, { signal }); } catch (e) {
    if (e.name === 'AbortError') throw e;
    fail(`${url}: ${e.message}`, 'io');
  }
  if (!res.ok) fail(`${url}: HTTP ${res.status} ${res.statusText}`, 'io');
  return res;
}

// Checks the manifest's fields that drawing relies on; a message naming the field otherwise.
function checkManifest(m, url) {
  if (m?.format !== FORMAT)
    fail(`${url}: format ${JSON.stringify(m?.format)} is not '${FORMAT}': not a surfgrad tiles manifest (write one with surfgrad map … --tiles DIR)`);
  if (m.version !== VERSION)
    fail(`${url}: version ${JSON.stringify(m.version)} of ${FORMAT}; this page reads version ${VERSION} (open it with a surfgrad of the same version)`);
  const b = m.bounds;
  if (!Array.isArray(b) || b.length !== 4 || !b.every(Number.isFinite) || !(b[2] > b[0] && b[3] > b[1]))
    fail(`${url}: bounds must be [x0, y0, x1, y1] with x1 > x0 and y1 > y0, got ${JSON.stringify(b)}`);
  if (!Array.isArray(m.tiles) || !m.tiles.length) fail(`${url}: no tiles listed`);
  if (!m.tiles.some((t) => t.key === m.root)) fail(`${url}: the root tile '${m.root}' is not among its tiles`);
  if (typeof m.tile_path !== 'string' || !m.tile_path.includes('{z}')) fail(`${url}: tile_path ${JSON.stringify(m.tile_path)} lacks {z}/{x}/{y}`);
}

// A decoded tile: x, y already in the plot's coordinates (and its bounds there), ix and label as in
// the file, z the label as the points layer's colour code, counts the points of each label.
function decodeTile(bytes, key, toPlot, url, bounds) {
  let t;
  try { t = tableFromIPC(new Uint8Array(bytes)); } catch (e) { fail(`${url}: not an Arrow IPC tile (${e.message})`); }
  const col = (name, required) => {
    const c = t.getChild(name);
    if (!c && required) fail(`${url}: tile ${key} has no column '${name}'`);
    return c ? c.toArray() : null;
  };
  const x = col('x', true), y = col('y', true), ix = col('ix', true), label = col('label', false);
  const n = t.numRows;
  const px = new Float32Array(n), py = new Float32Array(n);
  for (let i = 0; i < n; i++) { px[i] = (x[i] - toPlot.cx) * toPlot.s; py[i] = (y[i] - toPlot.cy) * toPlot.s; }
  let z = null, counts = null;
  if (label) {
    z = new Float32Array(n);
    counts = [];
    for (let i = 0; i < n; i++) { const l = label[i]; z[i] = l > 0 ? l : 0; if (l >= 0) counts[l] = (counts[l] ?? 0) + 1; }
  }
  const [x0, y0, x1, y1] = bounds;
  const plotBounds = [(x0 - toPlot.cx) * toPlot.s, (y0 - toPlot.cy) * toPlot.s, (x1 - toPlot.cx) * toPlot.s, (y1 - toPlot.cy) * toPlot.s];
  return { key, n, x: px, y: py, z, counts, bounds: plotBounds, ix: Uint32Array.from(ix), label: label ? Int32Array.from(label) : null };
}

export class TiledMap {
  // view: the page's MapView; onStatus({ loaded, total, points, firstViewMs, inFlight }); onError(e).
  constructor(view, { budget = 2_000_000, density = DENSITY, concurrency = 4, cacheTiles = 64, onStatus = () => {}, onError = () => {} } = {}) {
    Object.assign(this, { view, budget, density, concurrency, cacheTiles, onStatus, onError });
    this.cache = new Map(); // key → decoded tile, in least-recently-used order
    this.inFlight = new Map(); // key → AbortController
    this.everLoaded = new Set();
    this.drawnKeys = [];
    this.points = 0;
    this.firstViewMs = null;
    this.maxDepth = 0;
    this.debounce = null;
  }

  async open(url) {
    this.t0 = performance.now();
    this.url = manifestUrl(url);
    let m;
    const res = await fetchOk(this.url);
    try { m = await res.json(); } catch (e) { fail(`${this.url}: not JSON (${e.message})`); }
    checkManifest(m, this.url);
    this.manifest = m;
    this.tiles = new Map(m.tiles.map((t) => [t.key, { ...t, depth: Number(t.key.split('/')[0]) }]));
    this.parent = new Map();
    for (const t of m.tiles) for (const c of t.children ?? []) this.parent.set(c, t.key);
    // The manifest's bounds to the plot's [-0.92, 0.92] once (as plot.js normalise does for a
    // layout, aspect kept): every tile uses the same, so tiles are appended without rescaling.
    const [x0, y0, x1, y1] = m.bounds;
    this.toPlot = { cx: (x0 + x1) / 2, cy: (y0 + y1) / 2, s: 1.84 / Math.max(x1 - x0, y1 - y0) };
    this.setLegend();
    this.unsubscribe = this.view.onView(() => this.schedule());
    this.view.describe = (key, k) => this.describe(key, k);
    this.view.clear(); // (a layout drawn before: the tiles replace it)
    await this.load(m.root);
    this.update();
  }

  close() {
    for (const c of this.inFlight.values()) c.abort();
    this.inFlight.clear();
    this.unsubscribe?.();
    for (const k of this.drawnKeys) this.view.removePoints(k);
    this.drawnKeys = [];
    this.view.describe = null;
    this.closed = true;
  }

  // The legend from label_names (or the root's label numbers); colours by label number.
  setLegend() {
    const names = this.manifest.label_names;
    this.hasLabels = this.manifest.columns?.some((c) => c.name === 'label');
    if (!this.hasLabels) { this.view.setCats(null); return; }
    this.names = Array.isArray(names) ? names.map(String) : null;
  }

  // The legend counts the points drawn: each tile's label counts (decodeTile), summed.
  updateLegend() {
    if (!this.hasLabels) return;
    const counts = new Array(Math.max(this.names?.length ?? 0, 1)).fill(0);
    for (const t of this.drawn()) if (t.counts) t.counts.forEach((c, l) => { counts[l] = (counts[l] ?? 0) + (c ?? 0); });
    for (let l = 0; l < counts.length; l++) counts[l] ??= 0;
    const k = counts.length;
    const values = Array.from({ length: k }, (_, i) => this.names?.[i] ?? `label ${i}`);
    const same = this.view.cats && this.view.cats.values.length === k;
    if (same) { this.view.cats.counts = counts; this.view.renderLegend(); } else this.view.setCats({ codes: new Float32Array(0), values, counts, tiles: true });
  }

  // What point k of tile `key` is: its input row and label.
  describe(key, k) {
    const t = this.cache.get(key);
    if (!t || k >= t.n) return null;
    const l = t.label ? t.label[k] : null;
    return { i: t.ix[k], label: l == null ? 'no label' : (this.names?.[l] ?? `label ${l}`), code: l };
  }

  drawn() { return this.drawnKeys.map((k) => this.cache.get(k)).filter(Boolean); }

  // The view's rectangle in the manifest's coordinates, and pixels per unit there.
  viewRect() {
    const v = this.view.plot.get('cameraView');
    const canvas = this.view.canvas;
    const w = canvas.clientWidth || 1, h = canvas.clientHeight || 1;
    const aspect = w / h;
    // regl-scatterplot: NDC = P·V·p with P = diag(1/aspect, 1) and V = [a c e; b d f] (column-major).
    const a = v[0], b = v[1], c = v[4], d = v[5], e = v[12], f = v[13];
    const det = a * d - b * c || 1e-12;
    const corners = [[-1, -1], [1, -1], [-1, 1], [1, 1]].map(([nx, ny]) => {
      const X = nx * aspect - e, Y = ny - f;
      return [(d * X - c * Y) / det, (-b * X + a * Y) / det];
    });
    const { cx, cy, s } = this.toPlot;
    const xs = corners.map((p) => p[0] / s + cx), ys = corners.map((p) => p[1] / s + cy);
    const rect = [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
    return { rect, pxPerUnit: w / (rect[2] - rect[0]) };
  }

  // The tiles the view wants: the root, then the children of every wanted tile that is loaded,
  // intersects the view and is sparser on screen than DENSITY; largest visible area first.
  wanted() {
    const { rect, pxPerUnit } = this.viewRect();
    const visible = (bb) => Math.max(0, Math.min(bb[2], rect[2]) - Math.max(bb[0], rect[0])) * Math.max(0, Math.min(bb[3], rect[3]) - Math.max(bb[1], rect[1]));
    const root = this.tiles.get(this.manifest.root);
    const want = [{ t: root, area: Infinity }];
    for (let i = 0; i < want.length; i++) {
      const { t } = want[i];
      if (!this.cache.has(t.key)) continue;
      const area = (t.bounds[2] - t.bounds[0]) * (t.bounds[3] - t.bounds[1]) * pxPerUnit * pxPerUnit;
      if (t.rows / area >= this.density) continue;
      for (const ck of t.children ?? []) {
        const c = this.tiles.get(ck);
        const a = c && visible(c.bounds);
        if (a > 0) want.push({ t: c, area: a });
      }
    }
    want.sort((p, q) => q.area - p.area || p.t.depth - q.t.depth);
    // Up to the budget of points (the root always).
    let sum = 0;
    return want.filter(({ t }, i) => { sum += t.rows; return i === 0 || sum <= this.budget; }).map(({ t }) => t);
  }

  schedule() {
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => this.update(), 120);
  }

  // Draws what is loaded of the wanted tiles (and other decoded tiles while the budget allows, so a
  // pan shows what was seen before at once), cancels fetches no longer wanted, starts new ones.
  update() {
    if (this.closed || !this.manifest) return;
    const want = this.wanted();
    const keys = new Set(want.map((t) => t.key));
    for (const [k, c] of this.inFlight) if (!keys.has(k)) { c.abort(); this.inFlight.delete(k); }
    const draw = want.filter((t) => this.cache.has(t.key)).map((t) => t.key);
    let sum = draw.reduce((a, k) => a + this.cache.get(k).n, 0);
    for (const [k, t] of [...this.cache].reverse()) {
      if (keys.has(k) || sum + t.n > this.budget) continue;
      draw.push(k);
      sum += t.n;
    }
    this.redraw(draw, keys);
    for (const t of want) {
      if (this.inFlight.size >= this.concurrency) break;
      if (!this.cache.has(t.key) && !this.inFlight.has(t.key)) this.load(t.key).then(() => this.update(), () => {});
    }
    this.report();
  }

  async load(key) {
    const ctl = new AbortController();
    this.inFlight.set(key, ctl);
    const [z, x, y] = key.split('/');
    const url = new URL(this.manifest.tile_path.replace('{z}', z).replace('{x}', x).replace('{y}', y), this.url);
    try {
      const bytes = await (await fetchOk(url, ctl.signal)).arrayBuffer();
      const tile = decodeTile(bytes, key, this.toPlot, url, this.tiles.get(key).bounds);
      this.cache.set(key, tile);
      this.everLoaded.add(key);
      this.maxDepth = Math.max(this.maxDepth, this.tiles.get(key).depth);
      this.evict();
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      this.onError(e);
      throw e;
    } finally {
      if (this.inFlight.get(key) === ctl) this.inFlight.delete(key);
    }
  }

  // The least recently used tiles past cacheTiles go (never one drawn now): 64 tiles of 65,536
  // rows are ~67 MB (16 bytes a point: x, y, ix, label).
  evict() {
    const drawn = new Set(this.drawnKeys);
    for (const k of this.cache.keys()) {
      if (this.cache.size <= this.cacheTiles) break;
      if (!drawn.has(k) && k !== this.manifest.root) this.cache.delete(k);
    }
  }

  // Draws `keys`: a tile newly drawn is added to the view as its own batch of points and a tile
  // no longer drawn is removed (nothing else is sent again: the others stay on the GPU).
  redraw(keys, wanted) {
    for (const k of keys) if (wanted.has(k)) { const t = this.cache.get(k); this.cache.delete(k); this.cache.set(k, t); } // recently used
    if (keys.join() === this.drawnKeys.join()) return;
    const now = new Set(keys);
    for (const k of this.drawnKeys) if (!now.has(k)) this.view.removePoints(k);
    const before = new Set(this.drawnKeys);
    this.drawnKeys = keys;
    const tiles = this.drawn();
    this.points = tiles.reduce((a, t) => a + t.n, 0);
    this.updateLegend();
    const gen = (this.generation = (this.generation ?? 0) + 1);
    const adds = tiles.filter((t) => !before.has(t.key)).map((t) => this.view.addPoints(t.key, { x: t.x, y: t.y, z: this.hasLabels ? t.z : null, bounds: t.bounds }));
    const first = this.firstViewMs == null;
    Promise.all(adds).then(() => {
      if (this.closed) return;
      if (first && this.firstViewMs == null) this.firstViewMs = performance.now() - this.t0;
      if (gen === this.generation) this.drawnPoints = this.points;
      this.report();
    });
  }

  report() {
    this.onStatus({
      loaded: this.everLoaded.size, total: this.manifest.tiles.length, cached: this.cache.size, points: this.points,
      drawnPoints: this.drawnPoints ?? 0, inFlight: this.inFlight.size, firstViewMs: this.firstViewMs, maxDepth: this.maxDepth,
      drawnTiles: this.drawnKeys.length,
    });
  }

  // Zooms the plot to a rectangle of the manifest's coordinates (for tests and links).
  zoomTo(x0, y0, x1, y1) {
    const { cx, cy, s } = this.toPlot;
    this.view.zoomToArea({ x: (x0 - cx) * s, y: (y0 - cy) * s, width: (x1 - x0) * s, height: (y1 - y0) * s });
    this.update();
  }
}
