// Matmul rungs measured on the page's WebGPU (web/src/bench_web.cpp), the same way as
// `surfgrad bench matmul` natively: each rung checked against a float64 product on sampled
// outputs, then timed (median of up to `reps` runs after 100 ms of warm-up).
//
//   const r = await sg.benchMatmul({ sizes: '4096x4096x4096', variants: 'f16-tuned-tiled,f16-sgmat-direct' });
//   r.rows;  // [{ size, variant, ms, tflops, maxError, valid } | { size, variant, skipped } | { ..., failed }]
//
// In Chromium on a GPU whose adapter offers `chromium-experimental-subgroup-matrix` (launched with
// --enable-unsafe-webgpu), the f16-sgmat rungs run on the GPU's tensor cores; elsewhere they come
// back skipped with the reason.
import { cString, fail, requireModule, resultJson, serialized } from './runtime.js';

/**
 * Options (defaults): sizes '1024x1024x1024' (comma-separated MxNxK), variants
 * 'f16-tuned-tiled,f16-sgmat-direct' (rung names, as `surfgrad bench matmul --variants`), reps 10.
 * Returns { adapter, subgroupMatrix, subgroupMatrixConfigs, rows }.
 */
export async function benchMatmul(options) {
  const { exports } = requireModule('benchMatmul');
  const text = JSON.stringify(options ?? {});
  return serialized(async () => {
    const optionsPtr = cString(exports, text);
    try {
      if (await exports.sg_bench_matmul(optionsPtr) !== 0) throw fail(exports);
      return resultJson(exports);
    } finally {
      exports.sg_free(optionsPtr);
    }
  });
}
