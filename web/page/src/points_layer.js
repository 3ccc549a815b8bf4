// The map's points: WebGL point sprites drawn from GPU buffers, one batch of buffers per data set
// (a layout, or one tile of a tiled map), on a canvas of its own over regl-scatterplot's (which
// keeps the camera: zoom, pan, its 'view' events). Why not regl-scatterplot's own points: it takes
// only a whole new set of points, turned into one array per point and a float texture filled in
// JavaScript on the page's thread (0.5-1 s at 1M points), so a 1M layout or a tile arriving held
// every frame. Here a batch is three Float32Arrays (x, y in the plot's [-1, 1], a colour code)
// copied into buffers with bufferSubData in slices of a few milliseconds between frames: the page
// does no per-point work, and a tile's arrival adds its batch without touching the others.
import createREGL from 'regl';

// Points copied per slice (x, y, code: 12 bytes a point, 1.5 MB a slice); slices run while a frame
// has time left (SLICE_MS), then wait for the next one.
const SLICE = 131072;
const SLICE_MS = 8;
// Colour codes index a palette texture of this many entries (codes past it wrap, as plot.js's do).
const PALETTE_SIZE = 256;

const VERT = `
precision highp float;
attribute float x, y, code;
uniform mat4 projection, view;
uniform float pointSize, only;
uniform sampler2D palette;
varying vec4 colour;
varying float size;
void main() {
  // A label filter: the other codes are moved out of the clip volume (not drawn).
  if (only >= 0.0 && code != only) { gl_Position = vec4(2.0, 2.0, 2.0, 1.0); gl_PointSize = 0.0; return; }
  gl_Position = projection * view * vec4(x, y, 0.0, 1.0);
  gl_PointSize = pointSize;
  size = pointSize;
  colour = texture2D(palette, vec2((mod(code, ${PALETTE_SIZE}.0) + 0.5) / ${PALETTE_SIZE}.0, 0.5));
}`;

const FRAG = `
precision mediump float;
uniform float opacity;
varying vec4 colour;
varying float size;
void main() {
  // Round points from 3 px (smaller ones are squares, as they look anyway); premultiplied alpha.
  float a = opacity;
  if (size >= 3.0) {
    float r = length(gl_PointCoord - 0.5) * size;
    a *= clamp(size * 0.5 - r + 0.5, 0.0, 1.0);
    if (a <= 0.0) discard;
  }
  gl_FragColor = vec4(colour.rgb * a, a);
}`;

const HOVER_VERT = `
precision highp float;
attribute float unused;
uniform mat4 projection, view;
uniform vec2 at;
uniform float pointSize;
void main() { gl_Position = projection * view * vec4(at, 0.0, 1.0) + vec4(0.0 * unused); gl_PointSize = pointSize; }`;
const HOVER_FRAG = `
precision mediump float;
void main() {
  float r = length(gl_PointCoord - 0.5);
  if (r > 0.5) discard;
  gl_FragColor = r > 0.3 ? vec4(1.0) : vec4(0.067, 0.067, 0.067, 1.0);
}`;

const hexRgb = (h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));

export class PointsLayer {
  // canvas: the layer's own canvas (pointer events pass through to the plot's); getView() → the
  // camera's 4×4 view matrix (regl-scatterplot's cameraView).
  constructor(canvas, { getView, opacity = 0.85 }) {
    this.canvas = canvas;
    this.getView = getView;
    this.opacity = opacity;
    // WebGL 2 where there is one (regl draws with it as with WebGL 1) for its fences: a frame is
    // drawn, and a slice copied, only once the GPU has finished the last frame (paced). On a GPU
    // that is at once; on a CPU rasteriser (SwiftShader: ~1 s for 1M points) the page's thread
    // would otherwise wait inside a GL call for the frame before, a long task each frame.
    const attributes = { alpha: true, premultipliedAlpha: true, antialias: false, depth: false, stencil: false };
    this.gl = canvas.getContext('webgl2', attributes) ?? canvas.getContext('webgl', attributes);
    if (!this.gl) throw new Error('the points layer: this browser gives no WebGL context');
    this.regl = createREGL({ gl: this.gl });
    this.fence = null;
    this.batches = new Map(); // id → { n, uploaded, x, y, code (regl buffers), data, done: Promise }
    this.order = []; // the batches' ids in the order drawn
    this.jobs = []; // batches still copying, oldest first
    this.only = -1;
    this.pointSize = 2;
    this.hover = null; // [x, y] of the hovered point, in the plot's coordinates
    this.frames = 0; // renders, for benchmarks
    this.onFrame = null; // (ms): after each render, with its time on the page's thread
    this.palette = this.regl.texture({ width: PALETTE_SIZE, height: 1, data: new Uint8Array(PALETTE_SIZE * 4) });
    this.setColours(['#4e79a7']);
    const blend = { enable: true, func: { srcRGB: 'one', srcAlpha: 'one', dstRGB: 'one minus src alpha', dstAlpha: 'one minus src alpha' } };
    const common = {
      projection: () => this.projection(), view: () => this.getView(),
      pointSize: () => this.pointSize * this.scale(),
    };
    this.drawBatch = this.regl({
      vert: VERT, frag: FRAG, primitive: 'points', blend, depth: { enable: false },
      attributes: { x: this.regl.prop('x'), y: this.regl.prop('y'), code: this.regl.prop('code') },
      uniforms: { ...common, palette: this.palette, only: () => this.only, opacity: () => this.opacity },
      count: this.regl.prop('count'),
    });
    this.hoverBuffer = this.regl.buffer(new Float32Array([0]));
    this.drawHover = this.regl({
      vert: HOVER_VERT, frag: HOVER_FRAG, primitive: 'points', blend, depth: { enable: false },
      attributes: { unused: this.hoverBuffer },
      uniforms: { ...common, at: () => this.hover, pointSize: () => Math.max(7, this.pointSize * this.scale() + 4) },
      count: 1,
    });
    this.resize();
    new ResizeObserver(() => { this.resize(); this.render(); }).observe(canvas);
  }

  resize() {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(this.canvas.clientWidth * dpr)), h = Math.max(1, Math.round(this.canvas.clientHeight * dpr));
    if (this.canvas.width !== w || this.canvas.height !== h) { this.canvas.width = w; this.canvas.height = h; }
  }

  // regl-scatterplot's projection: x divided by the canvas's aspect ratio.
  projection() {
    const aspect = (this.canvas.clientWidth || 1) / (this.canvas.clientHeight || 1);
    return [1 / aspect, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1];
  }

  // Points grow slowly as the view zooms in (regl-scatterplot's 'asinh' point scale), in device px.
  scale() {
    const v = this.getView();
    const zoom = Math.sqrt(Math.abs(v[0] * v[5] - v[1] * v[4]));
    return (zoom > 1 ? Math.asinh(zoom) / Math.asinh(1) : 1) * (window.devicePixelRatio || 1);
  }

  // Colours of codes 0, 1, … (hex); codes past them cycle.
  setColours(hex) {
    const data = new Uint8Array(PALETTE_SIZE * 4);
    for (let i = 0; i < PALETTE_SIZE; i++) { data.set(hexRgb(hex[i % hex.length]), 4 * i); data[4 * i + 3] = 255; }
    this.palette.subimage({ width: PALETTE_SIZE, height: 1, data });
    this.requestRender();
  }

  // Adds (or replaces) batch `id`: { x, y, code } Float32Arrays of n points (code may be null: 0).
  // Resolves once its points are all on the GPU. A replaced batch is drawn until its successor has
  // been copied whole (no frame mixes two layouts).
  add(id, { x, y, code }) {
    const n = x.length;
    if (y.length !== n || (code && code.length !== n)) throw new Error(`points layer: batch ${id}: x, y and codes differ in length (${n}, ${y.length}, ${code?.length})`);
    const r = this.regl;
    const b = {
      id, n, uploaded: 0, data: { x, y, code },
      x: r.buffer({ usage: 'static', type: 'float', length: 4 * Math.max(1, n) }),
      y: r.buffer({ usage: 'static', type: 'float', length: 4 * Math.max(1, n) }),
      code: r.buffer({ usage: 'static', type: 'float', length: 4 * Math.max(1, n) }),
    };
    b.done = new Promise((resolve) => { b.resolve = resolve; });
    // A batch of the same id still copying is dropped for this one.
    const queued = this.jobs.findIndex((j) => j.id === id);
    if (queued >= 0) { const [old] = this.jobs.splice(queued, 1); this.destroy(old); old.resolve(false); }
    this.jobs.push(b);
    this.pump();
    return b.done;
  }

  remove(id) {
    const queued = this.jobs.findIndex((j) => j.id === id);
    if (queued >= 0) { const [old] = this.jobs.splice(queued, 1); this.destroy(old); old.resolve(false); }
    const b = this.batches.get(id);
    if (!b) return;
    this.batches.delete(id);
    this.order = this.order.filter((k) => k !== id);
    this.destroy(b);
    this.requestRender();
  }

  clear() { for (const id of [...this.batches.keys(), ...this.jobs.map((j) => j.id)]) this.remove(id); }

  destroy(b) { b.x.destroy(); b.y.destroy(); b.code.destroy(); b.data = null; }

  // Copies slices of the queued batches while this task has time, then yields to the next frame.
  pump() {
    if (this.pumping) return;
    this.pumping = true;
    const step = () => {
      if (this.busy()) { requestAnimationFrame(step); return; }
      const t0 = performance.now();
      while (this.jobs.length && performance.now() - t0 < SLICE_MS) {
        const b = this.jobs[0];
        const a = b.uploaded, e = Math.min(b.n, a + SLICE), { x, y, code } = b.data;
        if (e > a) {
          b.x.subdata(x.subarray(a, e), 4 * a);
          b.y.subdata(y.subarray(a, e), 4 * a);
          if (code) b.code.subdata(code.subarray(a, e), 4 * a);
        }
        b.uploaded = e;
        if (e === b.n) this.finish(this.jobs.shift());
      }
      if (this.jobs.length) requestAnimationFrame(step);
      else this.pumping = false;
    };
    step();
  }

  finish(b) {
    b.data = null; // (the arrays are the caller's; the layer keeps only the buffers)
    const old = this.batches.get(b.id);
    if (old) this.destroy(old); else this.order.push(b.id);
    this.batches.set(b.id, b);
    this.requestRender();
    b.resolve(true);
  }

  has(id) { return this.batches.has(id); }
  get count() { let s = 0; for (const b of this.batches.values()) s += b.n; return s; }

  requestRender() {
    if (this.renderQueued) return;
    this.renderQueued = true;
    requestAnimationFrame(() => { this.renderQueued = false; this.render(); });
  }

  // Whether the GPU is still on the last frame drawn (its fence not yet signalled; never with WebGL 1).
  busy() {
    const gl = this.gl;
    if (!this.fence) return false;
    if (gl.getSyncParameter(this.fence, gl.SYNC_STATUS) !== gl.SIGNALED) return true;
    gl.deleteSync(this.fence);
    this.fence = null;
    return false;
  }

  // Draws every batch with the camera's view now (called in the frame in which the view changed,
  // so points and camera move together), or in the next frame while the GPU is busy.
  render() {
    if (this.busy()) { this.requestRender(); return; }
    const t0 = performance.now();
    this.resize();
    const r = this.regl;
    r.poll();
    r.clear({ color: [0, 0, 0, 0] });
    for (const id of this.order) {
      const b = this.batches.get(id);
      if (b.n) this.drawBatch({ x: b.x, y: b.y, code: b.code, count: b.n });
    }
    if (this.hover) this.drawHover();
    if (this.gl.fenceSync) { this.fence = this.gl.fenceSync(this.gl.SYNC_GPU_COMMANDS_COMPLETE, 0); this.gl.flush(); }
    this.frames++;
    this.onFrame?.(performance.now() - t0);
  }
}
