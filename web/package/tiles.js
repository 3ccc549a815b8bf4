// The tile examples of issue 15, run on the page's WebGPU (web/src/tiles_web.cpp over the
// library's demos, src/demos/tile_*.cpp): each runs its fused tile kernels beside the same
// computation unfused and returns both results, their checks and timings.
//
//   const r = await sg.tileSpd({ systems: 256, n: 8, m: 8 });
//   r.residual;   // max ‖Hx − f‖/‖f‖ of the fused solves, H formed in float64
//
// Sizes past the device's workgroup memory (16 KiB in browsers by default) are refused with a
// SurfgradError of kind 'limit' naming the options to shrink.
import { SurfgradError, cString, fail, requireModule, resultJson, serialized } from './runtime.js';

async function tileDemo(name, fn, options) {
  const { exports } = requireModule(fn);
  // JSON would turn NaN and Infinity into null, which the module reads as "use the default".
  for (const [key, value] of Object.entries(options ?? {}))
    if (typeof value === 'number' && !Number.isFinite(value))
      throw new SurfgradError('value', `${fn}: option '${key}' must be a finite number, not ${value}`);
  const text = JSON.stringify(options ?? {});
  return serialized(async () => {
    const namePtr = cString(exports, name);
    const optionsPtr = cString(exports, text);
    try {
      if (await exports.sg_tile_demo(namePtr, optionsPtr) !== 0) throw fail(exports);
      return resultJson(exports);
    } finally {
      exports.sg_free(namePtr);
      exports.sg_free(optionsPtr);
    }
  });
}

/**
 * An MLP learns an image (pixel coordinates → colour), forward and backward each one tile kernel,
 * beside the same network on ordinary ops, both from the same initial parameters. Options
 * (defaults): side 16, hidden 16, layers 2, tileRows 8, threads 64, steps 60, lr 0.01, seed 1.
 */
export async function tileMlp(options) {
  const r = await tileDemo('mlp', 'tileMlp', options);
  for (const form of [r.fused, r.unfused]) {
    form.image = Float32Array.from(form.image);
    form.firstGradient = Float32Array.from(form.firstGradient);
  }
  return r;
}

/**
 * FFT convolution of a batch of real signals with one filter: one fused tile kernel each way
 * beside four. Options (defaults): signals 64 (even), length 64 (a power of two), taps 16,
 * tileRows 0 (the most that fit), threads 64, steps 2 (per timed group), seed 1.
 */
export function tileFftConv(options) {
  return tileDemo('fftconv', 'tileFftConv', options);
}

/**
 * Batched SPD solves x = (JᵀMJ + diag R)⁻¹·f by Cholesky: one fused tile kernel per system
 * beside four launches. Options (defaults): systems 256, n 8, m 8, rhs 1, threads 64, steps 1,
 * repeats 3, seed 1.
 */
export function tileSpd(options) {
  return tileDemo('spd', 'tileSpd', options);
}
