// The browser suite's in-page half: runs in headless Chromium (web/tests/browser_suite.mjs drives
// it) against the real package. Ops are checked against float64 references computed here,
// gradients against central finite differences of those references, bad input against the
// error kind and message it must raise; the MNIST maps are returned to the driver, which scores
// them with the native `surfgrad eval` beside native maps of the same options.
import * as sg from '../package/surfgrad.js';
import { testing } from '../package/tensor.js';
import { seeded } from '../bench/common.js';
import { loadMnist } from '../page/src/idx.js';
import { builtinMap, testPoints } from './points_suite.js';

const results = [];
function record(name, ok, detail = '') {
  results.push({ name, ok: !!ok, detail: String(detail) });
}

// Tests never run on unseeded or all-equal data: mulberry32, the peers benchmark's generator.
const rng = seeded;
function randomArray(n, seed, lo = -2, hi = 2) {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => lo + (hi - lo) * r());
}

// |got − want| ≤ atol + rtol·|want| everywhere; the first mismatch is reported with its index.
function close(got, want, atol, rtol) {
  if (got.length !== want.length) return `length ${got.length} ≠ ${want.length}`;
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= atol + rtol * Math.abs(want[i])))
      return `index ${i}: got ${got[i]}, want ${want[i]}`;
  }
  return '';
}

async function expectError(name, kind, pattern, body) {
  try {
    await body();
    record(name, false, `no error (expected ${kind})`);
  } catch (e) {
    const ok = e instanceof sg.SurfgradError && e.kind === kind && pattern.test(e.message);
    record(name, ok, `${e.kind}: ${e.message}`);
  }
}

const unaryRefs = {
  neg: [(x) => -x, -3, 3], abs: [Math.abs, -3, 3], exp: [Math.exp, -3, 3], log: [Math.log, 0.1, 5],
  sqrt: [Math.sqrt, 0.1, 5], rsqrt: [(x) => 1 / Math.sqrt(x), 0.1, 5], sin: [Math.sin, -3, 3], cos: [Math.cos, -3, 3],
  tanh: [Math.tanh, -3, 3], sigmoid: [(x) => 1 / (1 + Math.exp(-x)), -5, 5], relu: [(x) => Math.max(0, x), -3, 3],
  // The library's GELU is the tanh form (PyTorch's approximate='tanh'; src/tensor/unary_ops.cpp).
  gelu: [(x) => 0.5 * x * (1 + Math.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))), -3, 3],
};
async function testOps() {
  for (const [name, [ref, lo, hi]] of Object.entries(unaryRefs)) {
    const shape = [3, 7, 5];  // primes: no tile or workgroup multiple
    const values = randomArray(105, name.length * 17 + 3, lo, hi);
    const x = await sg.tensor(values, shape);
    const got = await (await x[name]()).toArray();
    record(`unary ${name}`, !close(got, Array.from(values, ref), 1e-5, 2e-4), close(got, Array.from(values, ref), 1e-5, 2e-4));
  }
  // Broadcasting binary ops: [4, 1, 6] with [5, 1].
  const av = randomArray(24, 11), bv = randomArray(5, 12, 0.5, 2);
  const a = await sg.tensor(av, [4, 1, 6]), b = await sg.tensor(bv, [5, 1]);
  const refs = { add: (x, y) => x + y, sub: (x, y) => x - y, mul: (x, y) => x * y, div: (x, y) => x / y,
                 maximum: Math.max, minimum: Math.min };
  for (const [name, f] of Object.entries(refs)) {
    const got = await (await a[name](b)).toArray();
    const want = [];
    for (let i = 0; i < 4; i++) for (let j = 0; j < 5; j++) for (let k = 0; k < 6; k++) want.push(f(av[i * 6 + k], bv[j]));
    const shape = (await a[name](b)).shape;
    const why = close(got, want, 1e-6, 1e-5) || (JSON.stringify(shape) !== '[4,5,6]' ? `shape ${shape}` : '');
    record(`binary ${name} (broadcast [4,1,6] with [5,1])`, !why, why);
  }
  // matmul of awkward sizes, against float64.
  const [M, K, N] = [37, 53, 29];
  const xv = randomArray(M * K, 21), wv = randomArray(K * N, 22);
  const got = await (await (await sg.tensor(xv, [M, K])).matmul(await sg.tensor(wv, [K, N]))).toArray();
  const want = new Float64Array(M * N);
  for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) {
    let s = 0;
    for (let k = 0; k < K; k++) s += xv[i * K + k] * wv[k * N + j];
    want[i * N + j] = s;
  }
  record('matmul 37×53 · 53×29', !close(got, want, 1e-4, 1e-4), close(got, want, 1e-4, 1e-4));
  // Reductions over an axis and all axes.
  const rv = randomArray(6 * 11, 31);
  const r = await sg.tensor(rv, [6, 11]);
  const rowSums = Array.from({ length: 6 }, (_, i) => rv.slice(i * 11, i * 11 + 11).reduce((p, q) => p + q, 0));
  const sumGot = await (await r.sum(1)).toArray();
  record('sum over dim 1', !close(sumGot, rowSums, 1e-5, 1e-5), close(sumGot, rowSums, 1e-5, 1e-5));
  const meanGot = await (await r.mean()).item();
  const meanWant = rowSums.reduce((p, q) => p + q, 0) / 66;
  record('mean of all', Math.abs(meanGot - meanWant) < 1e-6, `${meanGot} vs ${meanWant}`);
  const soft = await (await r.softmax(1)).toArray();
  const softWant = [];
  for (let i = 0; i < 6; i++) {
    const row = Array.from(rv.slice(i * 11, i * 11 + 11));
    const m = Math.max(...row), e = row.map((v) => Math.exp(v - m)), s = e.reduce((p, q) => p + q, 0);
    softWant.push(...e.map((v) => v / s));
  }
  record('softmax over dim 1', !close(soft, softWant, 1e-6, 1e-5), close(soft, softWant, 1e-6, 1e-5));
  const argmax = await (await r.argmax(1)).toArray();
  const argWant = Array.from({ length: 6 }, (_, i) => {
    const row = Array.from(rv.slice(i * 11, i * 11 + 11));
    return row.indexOf(Math.max(...row));
  });
  record('argmax over dim 1', argWant.every((v, i) => v === argmax[i]), `${Array.from(argmax)} vs ${argWant}`);
}

// d/dW of L(W) = Σ tanh(X·W) ⊙ Y + 0.5 Σ W², by backward() against central differences of
// the float64 function.
async function testGradients() {
  const [M, K, N] = [5, 7, 3];
  const xv = randomArray(M * K, 41), wv = randomArray(K * N, 42, -0.5, 0.5), yv = randomArray(M * N, 43);
  const loss64 = (w) => {
    let total = 0;
    for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += xv[i * K + k] * w[k * N + j];
      total += Math.tanh(s) * yv[i * N + j];
    }
    for (const v of w) total += 0.5 * v * v;
    return total;
  };
  const x = await sg.tensor(xv, [M, K]);
  const w = await sg.tensor(wv, [K, N], { requiresGrad: true });
  const y = await sg.tensor(yv, [M, N]);
  const fit = await (await (await (await x.matmul(w)).tanh()).mul(y)).sum();
  const reg = await (await (await w.pow(2)).sum()).mul(0.5);
  const loss = await fit.add(reg);
  await loss.backward();
  const grad = await (await w.grad()).toArray();
  const fd = [];
  const h = 1e-6;
  for (let i = 0; i < wv.length; i++) {
    const plus = Float64Array.from(wv), minus = Float64Array.from(wv);
    plus[i] += h;
    minus[i] -= h;
    fd.push((loss64(plus) - loss64(minus)) / (2 * h));
  }
  const lossGot = await loss.item();
  record('loss value against float64', Math.abs(lossGot - loss64(Float64Array.from(wv))) < 1e-4,
         `${lossGot} vs ${loss64(Float64Array.from(wv))}`);
  record('gradient of Σ tanh(XW)⊙Y + ½ΣW² against finite differences', !close(grad, fd, 1e-4, 1e-3), close(grad, fd, 1e-4, 1e-3));
}

// A tile kernel on the page's WebGPU: relu(X·W) as one generated kernel, 37 rows (not a
// multiple of its 16-row tiles), against float64; d/dX and d/dW of Σ relu(XW) ⊙ Y by its
// generated backward kernel against central differences; a tile too large for workgroup memory
// refused by name.
async function testTileKernel() {
  const [M, K, N] = [37, 6, 5];
  const xv = randomArray(M * K, 61), wv = randomArray(K * N, 62, -1, 1), yv = randomArray(M * N, 63);
  const loss64 = (x, w) => {
    let total = 0;
    for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += x[i * K + k] * w[k * N + j];
      total += Math.max(0, s) * yv[i * N + j];
    }
    return total;
  };
  const want = [];
  for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) {
    let s = 0;
    for (let k = 0; k < K; k++) s += xv[i * K + k] * wv[k * N + j];
    want.push(Math.max(0, s));
  }
  const x = await sg.tensor(xv, [M, K], { requiresGrad: true });
  const w = await sg.tensor(wv, [K, N], { requiresGrad: true });
  const out = await x.tileMatmulRelu(w);
  const got = await out.toArray();
  record('tile kernel relu(X·W) 37×6 · 6×5 against float64', !close(got, want, 1e-5, 1e-5), close(got, want, 1e-5, 1e-5));
  const loss = await (await out.mul(await sg.tensor(yv, [M, N]))).sum();
  await loss.backward();
  const h = 1e-6;
  const fdOf = (values, which) => values.map((_, i) => {
    const plus = Float64Array.from(values), minus = Float64Array.from(values);
    plus[i] += h;
    minus[i] -= h;
    return which === 'x' ? (loss64(plus, wv) - loss64(minus, wv)) / (2 * h) : (loss64(xv, plus) - loss64(xv, minus)) / (2 * h);
  });
  const gx = await (await x.grad()).toArray(), gw = await (await w.grad()).toArray();
  const fx = Array.from(fdOf(Array.from(xv), 'x')), fw = Array.from(fdOf(Array.from(wv), 'w'));
  record('tile kernel backward: d/dX against finite differences', !close(gx, fx, 1e-4, 1e-3), close(gx, fx, 1e-4, 1e-3));
  record('tile kernel backward: d/dW against finite differences', !close(gw, fw, 1e-4, 1e-3), close(gw, fw, 1e-4, 1e-3));
  const big = await sg.tensor(randomArray(16 * 200, 64), [16, 200]);
  const bigW = await sg.tensor(randomArray(200 * 200, 65), [200, 200]);
  await expectError('tile kernel larger than workgroup memory', 'limit', /tile_matmul_relu_200x200.*workgroup memory/i,
                    () => big.tileMatmulRelu(bigW));
}

// The tile examples of issue 15 (sg.tileMlp, sg.tileFftConv, sg.tileSpd: the library's demos,
// src/demos/tile_*.cpp), each fused beside its unfused form on the page's WebGPU, at sizes that fit
// 16 KiB of workgroup memory. Their timings go into the report (tileTimings).
export const tileTimings = {};
const ms = (t0) => Math.round(performance.now() - t0);

async function testTileMlp() {
  const t0 = performance.now();
  // f32 weights: the fused and unfused forms compute the same numbers (f16 weights: see below).
  const r = await sg.tileMlp({ side: 16, hidden: 16, layers: 2, steps: 40, weights: 'f32' });
  const { fused: f, unfused: u } = r;
  tileTimings.mlp = { seconds: ms(t0) / 1000, fusedMsPerStep: f.msPerStep, unfusedMsPerStep: u.msPerStep,
                      fusedDispatches: f.dispatchesPerStep, unfusedDispatches: u.dispatchesPerStep };
  // The forward kernel: the loss at the initial parameters, the same numbers as the unfused network's.
  record('tile MLP: fused loss at the initial parameters equals the unfused', Math.abs(f.firstLoss - u.firstLoss)
         <= 1e-5 * u.firstLoss, `${f.firstLoss} vs ${u.firstLoss}`);
  // The backward kernel: the whole gradient at the initial parameters (packed layout).
  record('tile MLP: fused gradient at the initial parameters equals the unfused (max |difference| ≤ 1e-4 of its scale)',
         r.gradientScale > 0 && r.gradientDifference <= 1e-4 * r.gradientScale,
         `max |difference| ${r.gradientDifference}, scale ${r.gradientScale}`);
  const curve = f.losses.map((l) => l.loss);
  record('tile MLP: the loss goes down (40 Adam steps: below 0.6 of the first, every recorded loss below the first)',
         f.finalLoss < 0.6 * f.firstLoss && u.finalLoss < 0.6 * u.firstLoss && curve.slice(1).every((l) => l < curve[0]),
         `fused ${curve.map((l) => l.toFixed(4)).join(' ')}; unfused final ${u.finalLoss.toFixed(4)}`);
  // Same gradients, same Adam: the two forms train alike (a wrong backward would part them).
  record('tile MLP: fused and unfused final losses agree within 1%', Math.abs(f.finalLoss - u.finalLoss)
         <= 0.01 * u.finalLoss, `${f.finalLoss} vs ${u.finalLoss}`);
  record('tile MLP: fused in fewer dispatches per step, image side² × 3 finite values',
         f.dispatchesPerStep < u.dispatchesPerStep && f.image.length === 16 * 16 * 3 && f.image.every(Number.isFinite),
         `${f.dispatchesPerStep} vs ${u.dispatchesPerStep} dispatches, ${f.msPerStep.toFixed(1)} vs ${u.msPerStep.toFixed(1)} ms/step`);
  // The default weights: f16 where the page's adapter has shader-f16 (mixed precision), else f32.
  const h = await sg.tileMlp({ side: 16, hidden: 16, layers: 2, steps: 40 });
  // (f16: where rounding moves a pre-activation across 0 a ReLU's derivative flips, so the
  // gradient moves by more than f16's precision: a few % of its largest element.)
  record('tile MLP: default weights (f16 where the adapter has shader-f16) learn, gradient within 20% of f32',
         (h.fused.weights === 'f16' || h.fused.weights === 'f32') && h.fused.finalLoss < 0.6 * h.fused.firstLoss &&
         h.gradientDifference <= 0.2 * h.gradientScale,
         `weights ${h.fused.weights}, loss ${h.fused.firstLoss.toFixed(4)} → ${h.fused.finalLoss.toFixed(4)}, ` +
         `gradient difference ${h.gradientDifference} of ${h.gradientScale}`);
  await expectError('tile MLP: an unknown weights type refused', 'value', /weights 'f64'; use f32, f16 or auto/,
                    () => sg.tileMlp({ weights: 'f64' }));
  await expectError('tile MLP: tileRows −1 refused (0 is "chosen for the adapter")', 'value', /tile rows is -1; it must be ≥ 0/,
                    () => sg.tileMlp({ tileRows: -1 }));
  await expectError('tile MLP: a network past workgroup memory refused, naming the options', 'limit',
                    /hidden 256, layers 2 and tile rows 64 need \d+ bytes of workgroup memory.*maxComputeWorkgroupStorageSize/,
                    () => sg.tileMlp({ hidden: 256, tileRows: 64 }));
  await expectError('tile MLP: a fractional option refused by name', 'value', /tileMlp option 'steps' must be a whole number/,
                    () => sg.tileMlp({ steps: 2.5 }));
  await expectError('tile MLP: a NaN option refused by name (not taken as the default)', 'value',
                    /tileMlp: option 'lr' must be a finite number/, () => sg.tileMlp({ lr: NaN }));
}

async function testTileFftConv() {
  const t0 = performance.now();
  const r = await sg.tileFftConv({ signals: 64, length: 64, taps: 16, steps: 1 });
  tileTimings.fftconv = { seconds: ms(t0) / 1000, fused: r.fused, unfused: r.unfused, tileRows: r.tileRows };
  // Against a direct float64 convolution of 5 signals. The bound is SwiftShader's: WGSL lets sin
  // and cos (the twiddles between passes) be off by 2^-11, and SwiftShader's are (1.8e-4 of the
  // scale here; lavapipe's 1e-6). A wrong kernel is off by the scale itself.
  const bound = 5e-4 * Math.max(1, r.outputScale);
  record('tile FFT convolution: fused output against float64 direct convolution', r.maxError <= bound,
         `max |error| ${r.maxError.toExponential(2)} (bound ${bound.toExponential(2)}), outputs up to ${r.outputScale.toFixed(2)}`);
  record('tile FFT convolution: unfused (4 kernels) output against float64', r.unfusedMaxError <= bound,
         `max |error| ${r.unfusedMaxError.toExponential(2)}`);
  record('tile FFT convolution: gradients (signals and filter) fused vs unfused', r.gradDifference <= 1e-3,
         `max |difference| ${r.gradDifference.toExponential(2)}`);
  record('tile FFT convolution: fused in fewer dispatches', r.fused.forwardDispatches < r.unfused.forwardDispatches &&
         r.fused.trainDispatches < r.unfused.trainDispatches,
         `forward ${r.fused.forwardDispatches} vs ${r.unfused.forwardDispatches}, forward + backward ${r.fused.trainDispatches} vs ${r.unfused.trainDispatches}`);
  await expectError('tile FFT convolution: a length not a power of two refused', 'value', /signal length 100; a power of two/,
                    () => sg.tileFftConv({ length: 100 }));
  await expectError('tile FFT convolution: a length past workgroup memory refused, naming it', 'limit',
                    /signal length 4096 .* workgroup memory.*maxComputeWorkgroupStorageSize.*shorter length/,
                    () => sg.tileFftConv({ length: 4096 }));
  await expectError('tile FFT convolution: an odd signal count refused', 'value', /63 signals; an even number/,
                    () => sg.tileFftConv({ signals: 63 }));
}

async function testTileSpd() {
  const t0 = performance.now();
  const r = await sg.tileSpd({ systems: 256, n: 8, m: 8, steps: 1, repeats: 1 });
  tileTimings.spd = { seconds: ms(t0) / 1000, runs: r.runs };
  record('tile SPD: 256 fused solves, max ‖Hx − f‖/‖f‖ ≤ 1e-4 (H = JᵀMJ + diag R in float64)', r.residual <= 1e-4,
         `residual ${r.residual.toExponential(2)}`);
  record('tile SPD: fused vs unfused (4 kernels) ≤ 1e-4 of max |x|', r.unfusedDifference <= 1e-4,
         `${r.unfusedDifference.toExponential(2)}`);
  record('tile SPD: gradients of J, M, R and f, fused vs unfused backward kernels ≤ 1e-4 of their scale',
         r.gradientDifference >= 0 && r.gradientDifference <= 1e-4, `${r.gradientDifference.toExponential(2)}`);
  const by = (form, backward) => r.runs.find((run) => run.form === form && run.backward === backward);
  record('tile SPD: all four runs, fused in fewer dispatches and kernels', r.runs.length === 4 && !r.note &&
         [false, true].every((b) => by('fused', b).dispatches < by('unfused', b).dispatches),
         r.runs.map((run) => `${run.form}${run.backward ? '+backward' : ''} ${run.ms.toFixed(0)} ms ${run.dispatches} dispatches`).join(', '));
  const limit = sg.device().limits.maxComputeWorkgroupStorageSize;
  await expectError(`tile SPD: n = m = 64 past this adapter's workgroup memory (${limit} bytes) refused, naming n and m`,
                    'limit', /n 64, m 64 needs \d+ bytes of workgroup memory.*maxComputeWorkgroupStorageSize.*smaller n or m/,
                    () => sg.tileSpd({ n: 64, m: 64 }));
  await expectError('tile SPD: an unknown option refused by name', 'value', /unknown tileSpd option 'size'/,
                    () => sg.tileSpd({ size: 8 }));
}

// Matmul rungs measured in the page as `surfgrad bench matmul` measures them natively (issue 34:
// tensor cores in the browser where Chromium offers subgroup matrices; here they come back skipped).
async function testBenchMatmul() {
  const r = await sg.benchMatmul({ sizes: '64x48x80', variants: 'tiled-64,f16-tuned-tiled,f16-sgmat-direct', reps: 3 });
  const row = (v) => r.rows.find((x) => x.variant === v) || {};
  record('benchMatmul: tiled-64 at 64x48x80 within its tolerance against float64, timed',
         row('tiled-64').valid === true && row('tiled-64').maxError <= row('tiled-64').tolerance && row('tiled-64').ms > 0,
         JSON.stringify(row('tiled-64')));
  const f16 = row('f16-tuned-tiled');
  record('benchMatmul: f16 rung timed within tolerance, or skipped with its reason',
         (f16.valid === true && f16.ms > 0) || /shader-f16/.test(f16.skipped || ''), JSON.stringify(f16));
  const sm = row('f16-sgmat-direct');
  record('benchMatmul: the subgroup-matrix rung runs where the device has them, else is skipped saying why',
         r.subgroupMatrix ? sm.valid === true : typeof sm.skipped === 'string' && sm.skipped.length > 0,
         `subgroupMatrix ${r.subgroupMatrix}, ${r.subgroupMatrixConfigs.length} configs, ${JSON.stringify(sm)}`);
  await expectError('benchMatmul: an unknown rung refused by name', 'value', /no rung named 'f16-fastest'/,
                    () => sg.benchMatmul({ variants: 'f16-fastest' }));
  await expectError('benchMatmul: a malformed size refused by name', 'value', /'sizes': '64x64' is not MxNxK/,
                    () => sg.benchMatmul({ sizes: '64x64' }));
}

// The C++ demo's two-moons MLP, trained from JavaScript. Ops are synchronous (issue 36): the
// training loop has no await; its losses must be those of the all-async API it replaced (the
// float32 values below, read with that API's build on SwiftShader, 2026-11-27), and the same
// steps written in the old awaited style must give the same bits.
const moonsLosses = { 1: 0.6987606287002563, 2: 0.5945525765419006, 10: 0.20597146451473236,
                      100: 0.00009350299660582095, 300: 0.000032418967748526484 };

function moonsData() {
  const n = 400, r = rng(7);
  const xy = new Float32Array(2 * n), labels = new Int32Array(n);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
  for (let i = 0; i < n; i++) {
    const second = i >= n / 2, t = Math.PI * (second ? i - n / 2 : i) / (n / 2 - 1);
    xy[2 * i] = (second ? 1 - Math.cos(t) : Math.cos(t)) + 0.1 * gauss();
    xy[2 * i + 1] = (second ? 0.5 - Math.sin(t) : Math.sin(t)) + 0.1 * gauss();
    labels[i] = second ? 1 : 0;
  }
  return { n, xy, labels };
}

async function testMoons() {
  const { n, xy, labels } = moonsData();
  const x = sg.tensor(xy, [n, 2]);
  const y = sg.tensor(labels, [n]);
  const model = sg.nn.mlp([2, 16, 16, 2], { seed: 1 });
  const opt = sg.optim.adam(model, { lr: 0.05 });
  const losses = {};  // step → the loss tensor, read after the loop
  let loss;
  for (let step = 1; step <= 300; step++) {
    loss = sg.nn.crossEntropy(model.forward(x), y);
    opt.zeroGrad();
    loss.backward();
    opt.step();
    if (step in moonsLosses) losses[step] = loss.detach();
  }
  const accuracy = await sg.noGrad(() => model.forward(x).argmax(1).eq(y).mean()).item();
  record('moons MLP trained from JavaScript without await on ops (≥ 99% training accuracy)', accuracy >= 0.99,
         `accuracy ${accuracy.toFixed(4)}, final loss ${(await loss.item()).toFixed(6)}`);
  const got = {};
  for (const step of Object.keys(losses)) got[step] = await losses[step].item();
  const same = Object.keys(moonsLosses).every((step) => got[step] === Math.fround(moonsLosses[step]));
  record('moons MLP: the same losses as the all-async API (steps 1, 2, 10, 100, 300, bit for bit)', same,
         JSON.stringify(got));

  // The old style, every op awaited, for 10 steps of a fresh model: the same values.
  const old = await sg.nn.mlp([2, 16, 16, 2], { seed: 1 });
  const oldOpt = await sg.optim.adam(old, { lr: 0.05 });
  let oldLoss;
  for (let step = 1; step <= 10; step++) {
    oldLoss = await sg.nn.crossEntropy(await old.forward(await x), await y);
    await oldOpt.zeroGrad();
    await oldLoss.backward();
    await oldOpt.step();
  }
  const oldValue = await oldLoss.item();
  record('moons MLP in the old awaited style: the same loss at step 10', oldValue === got[10], `${oldValue} vs ${got[10]}`);
}

// A GPU error of a recorded op (its kernel rejected by the browser's compiler, after its checks
// passed) reaches the next read, naming the op; a shape error throws at the op itself; the
// module works normally afterwards.
async function testRecordedErrors() {
  const x = sg.tensor(randomArray(6, 5), [2, 3]);
  const w = sg.tensor(randomArray(12, 6), [3, 4]);
  let threw = null;
  try {
    x.matmul(x);
  } catch (e) {
    threw = e;
  }
  record('a shape error throws at the op, synchronously', threw instanceof sg.SurfgradError && threw.kind === 'shape' &&
         /matmul/.test(threw.message), threw ? `${threw.kind}: ${threw.message}` : 'no error');
  const bad = testing.invalidOp(x);  // recorded: nothing has run yet
  record('an op whose kernel the GPU will reject records without an error', bad.shape.join() === '2,3', `[${bad.shape}]`);
  await expectError('its GPU error surfaces at the read, naming the op and its operands', 'device',
                    /invalid_for_tests → f32\[2, 3\], run by toArray of f32\[2, 3\].*failed/s, () => bad.toArray());
  // Run inside a later synchronous op (matmul binds it): the error names both.
  const product = testing.invalidOp(x).matmul(w);
  await expectError('an error inside a later op surfaces at that op\'s read, naming both', 'device',
                    /invalid_for_tests → f32\[2, 3\], run by matmul of f32\[2, 3\] and f32\[3, 4\]/, () => product.toArray());
  await expectError('and at sg.realize()', 'device', /invalid_for_tests.*run by realize/,
                    () => sg.realize(testing.invalidOp(x)));
  const xv = await x.toArray(), wv = await w.toArray();
  const want = new Float64Array(8);
  for (let i = 0; i < 2; i++)
    for (let j = 0; j < 4; j++)
      for (let k = 0; k < 3; k++) want[i * 4 + j] += xv[i * 3 + k] * wv[k * 4 + j];
  const err = close(await x.matmul(w).toArray(), want, 1e-5, 1e-5);
  record('after the errors, ops and reads work as before', !err, err);
  // While a queued call (a map) runs, tensor calls are refused, naming it (its C++ is mid-work).
  let during = null;
  await sg.umap(randomArray(200 * 8, 9), 8, { epochs: 10, onProgress: () => {
    if (during) return;
    try {
      x.add(1);
      during = 'no error';
    } catch (e) {
      during = e;
    }
  } });
  record('a tensor call while a map runs is refused, naming what to await', during instanceof sg.SurfgradError &&
         during.kind === 'value' && /add_scalar: .* is still running; await it/.test(during.message),
         `${during && during.kind}: ${during && during.message || during}`);
  // A read does not see ops recorded after it (the copy is queued when toArray() is called).
  const v = sg.tensor([1, 2, 3]);
  const before = v.toArray();
  const twice = v.mul(2);
  const [b, t] = await Promise.all([before, twice.toArray()]);
  record('reads see the values as of their call; tensor calls may run while a read waits',
         b.join() === '1,2,3' && t.join() === '2,4,6', `${b} / ${t}`);
}

function npyBytes(descr, shape, values) {
  const header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  const text = header + ' '.repeat(pad % 64) + '\n';
  const out = new Uint8Array(10 + text.length + values.byteLength);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, text.length & 0xff, text.length >> 8]);
  out.set(new TextEncoder().encode(text), 10);
  out.set(new Uint8Array(values.buffer, values.byteOffset, values.byteLength), 10 + text.length);
  return out;
}

async function testBadInput() {
  const pts = randomArray(200 * 8, 51);
  await expectError('t-SNE perplexity above its range', 'value', /perplexity \(--perplexity\) must be a number in \(1, 43\)/,
                    () => sg.tsne(pts, 8, { perplexity: 80 }));
  await expectError('t-SNE perplexity above the point count', 'value', /perplexity.*\(1, 33\] for 100 points/,
                    () => sg.tsne(pts.subarray(0, 100 * 8), 8, { perplexity: 40 }));
  // The schema the options come from: every name a method takes, UMAP's learning rate among them.
  const schema = sg.mapOptionSchema();
  record('the map-option schema lists UMAP learningRate, negativeSampleRate and the metric',
         schema.some((s) => s.js === 'learningRate' && s.method === 'umap') &&
         schema.some((s) => s.js === 'negativeSampleRate') && schema.some((s) => s.js === 'metric'),
         schema.map((s) => `${s.method}:${s.js}`).join(' '));
  await expectError('a t-SNE option given to UMAP', 'value', /unknown option 'perplexity'/,
                    () => sg.umap(pts, 8, { perplexity: 30 }));
  await expectError('a choice outside its words', 'value', /metric.*euclidean or cosine/,
                    () => sg.umap(pts, 8, { metric: 'manhattan' }));
  await expectError('points not a multiple of d', 'shape', /1600 values are not n points of d = 7/,
                    () => sg.umap(pts, 7));
  await expectError('unknown map option', 'value', /unknown option 'perplexty'/,
                    () => sg.tsne(pts, 8, { perplexty: 30 }));
  const nan = Float32Array.from(pts);
  nan[77] = NaN;
  await expectError('NaN in the points', 'value', /NaN|not finite|non-finite/i, () => sg.umap(nan, 8));
  await expectError('identical points', 'value', /identical|variance/i, () => sg.umap(new Float32Array(1600).fill(3), 8));
  await expectError('UMAP nNeighbors out of range', 'value', /n_neighbors/, () => sg.umap(pts, 8, { nNeighbors: 1 }));
  await expectError('a garbage .npy', 'io', /npy/i, async () => sg.readNpy(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])));
  const good = npyBytes('<f8', [2, 3], Float64Array.from([1, 2.5, -3, 4, 5, 6e6]));
  const parsed = sg.readNpy(good);
  record('a float64 .npy read as float32', JSON.stringify(parsed.shape) === '[2,3]' && parsed.data[5] === 6e6 &&
         parsed.dtype === '<f8', `${parsed.dtype} [${parsed.shape}] ${Array.from(parsed.data)}`);
  await expectError('a truncated .npy', 'io', /truncated|bytes|short/i, async () => sg.readNpy(good.slice(0, good.length - 5)));
  const a = await sg.tensor(randomArray(6, 1), [2, 3]), b = await sg.tensor(randomArray(8, 2), [4, 2]);
  await expectError('matmul of [2,3] and [4,2]', 'shape', /matmul.*\[2, 3\].*\[4, 2\]/, () => a.matmul(b));
  await expectError('values that do not fill the shape', 'shape', /5 values do not fill shape \[2,3\]/,
                    () => sg.tensor(new Float32Array(5), [2, 3]));
  await expectError('a disposed tensor', 'value', /disposed/, async () => {
    const t = await sg.tensor(new Float32Array(3));
    t.dispose();
    return t.add(t);
  });
  // Cancellation through an AbortSignal, and the module keeps working afterwards.
  const controller = new AbortController();
  await expectError('a map cancelled by its AbortSignal', 'cancelled', /cancel/i, () => sg.umap(pts, 8, {
    onProgress: () => controller.abort(), signal: controller.signal }));
  const after = await sg.umap(pts, 8, { epochs: 50 });
  record('a map after the errors above', after.embedding.length === 400 && after.embedding.every(Number.isFinite), '');
}

// The options the driver gives the native CLI too. t-SNE runs 500 iterations (250 of them
// exaggerated) rather than 750: SwiftShader is slow, and the comparison needs equal options, not
// the default ones.
export const mnistOptions = { tsne: { pcaComponents: 50, seed: 1, iterations: 500 }, umap: { pcaComponents: 50, seed: 1 } };

async function mnistMaps() {
  const mnist = await loadMnist('/data/mnist10k/');
  const maps = {};
  for (const method of ['tsne', 'umap']) {
    const t0 = performance.now();
    // The native CLI maps the IDX pixels as they are (0–255): the same input here.
    const r = await sg[method](mnist.points.map((v) => v * 255), 784, mnistOptions[method]);
    maps[method] = { embedding: Array.from(r.embedding), seconds: (performance.now() - t0) / 1000, timings: r.timings };
  }
  return maps;
}

// `only`: the names of the groups to run (all when absent; e.g. ['points'] while working on one).
window.runSuite = async ({ mnist = true, only = null } = {}) => {
  // A wasm that does not load fails init() by name, and the next init() starts afresh (the device
  // the failed one prefetched while the wasm compiled is destroyed: runtime.js).
  await expectError('init: a wasm URL that does not load is named', 'io', /could not load .*no-such-module\.wasm/,
                    () => sg.init({ wasmUrl: new URL('/no-such-module.wasm', location.href) }));
  // init({ wasmModule }): a page's own compile of the wasm (issue 35's second load), checked before
  // it is used; this suite's device then comes from it.
  await expectError('init: a wasmModule that is not a WebAssembly.Module is named', 'value',
                    /wasmModule must be a WebAssembly\.Module.*ArrayBuffer/, () => sg.init({ wasmModule: new ArrayBuffer(8) }));
  const wasmModule = WebAssembly.compileStreaming(fetch(new URL('../package/surfgrad.wasm', import.meta.url)));
  const info = await sg.init({ wasmModule });
  record('init: a device with its adapter named', !!info.adapter, `${info.adapter} (${info.implementation})`);
  // init() used that Module: the wasm was fetched once (by this suite), not again by init().
  const fetched = performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/surfgrad.wasm')).length;
  record('init: from a WebAssembly.Module the page compiled (the wasm fetched once)', fetched === 1,
         `${fetched} fetches; initMs ${JSON.stringify(info.initMs)}`);
  let builtin = null;
  // 'points' first: its wasm-memory check needs a heap that earlier tests have not left room in.
  for (const [name, body] of [['points', () => testPoints(record, expectError)],
                              ['built-in points', async () => { builtin = await builtinMap(record); }],
                              ['ops', testOps], ['gradients', testGradients], ['tile kernel', testTileKernel],
                              ['tile MLP', testTileMlp], ['tile FFT convolution', testTileFftConv],
                              ['tile SPD', testTileSpd], ['bench matmul', testBenchMatmul], ['moons', testMoons],
                              ['recorded errors', testRecordedErrors],
                              ['bad input', testBadInput]]) {
    if (only && !only.includes(name)) continue;
    try {
      await body();
    } catch (e) {
      record(`${name}: ran to the end`, false, `${e.kind || ''} ${e.message}\n${e.stack}`);
    }
  }
  let maps = null;
  if (mnist) {
    try {
      maps = await mnistMaps();
    } catch (e) {
      record('MNIST maps: ran', false, `${e.kind || ''} ${e.message}`);
    }
  }
  return { info, results, maps, tileTimings, builtin };
};
window.suiteReady = true;
