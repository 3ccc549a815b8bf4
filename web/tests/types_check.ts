// Compiled (not run) by scripts/test_web.sh with tsc --strict: the package's declarations
// (web/package/surfgrad.d.ts) must describe the API as the README and the tests use it.
import * as sg from '../package/surfgrad.js';

export async function example(points: Float32Array, labels: Int32Array): Promise<number> {
  const device: sg.DeviceInfo = await sg.init({ powerPreference: 'high-performance' });
  const controller = new AbortController();
  const map: sg.MapResult = await sg.umap(points, 784, {
    nNeighbors: 15,
    minDist: 0.1,
    seed: 1,
    signal: controller.signal,
    onProgress: (p: sg.MapProgress) => p.done > 10 && p.phase === 'optimise',
  });
  const t: sg.MapResult = await sg.tsne({ data: points, shape: [points.length / 784, 784] }, { perplexity: 30, learningRate: 'auto' });
  const npy = sg.readNpy(new Uint8Array(128));
  async function* rows(): AsyncGenerator<Float32Array> {
    for (let r = 0; r < points.length; r += 784 * 100) yield points.subarray(r, r + 784 * 100);
  }
  const source: sg.PointSource = { n: points.length / 784, d: 784, blocks: rows() };
  const streamed: sg.MapResult = await sg.umap(source, { nNeighbors: 15, signal: controller.signal });
  const builtin: sg.BuiltinPoints = sg.builtinPoints(1_000_000);
  const clusters: sg.MapResult = await sg.tsne(builtin, { perplexity: 30 });
  const file = await sg.npyPoints(new Blob([new Uint8Array(128)]));
  const fromFile: sg.MapResult = await sg.umap(file, { epochs: 200 });
  const streamedSeconds = (streamed.timings.upload ?? 0) + (clusters.labels?.length ?? 0) + fromFile.n + file.shape[1] +
    builtin.labels.length;
  const x = await sg.tensor(points, [points.length / 784, 784]);
  const y = await sg.tensor(labels, [labels.length]);
  const model = await sg.nn.mlp([784, 64, 10], { activation: 'gelu', seed: 2 });
  const opt = await sg.optim.adam(model, { lr: 1e-3 });
  const loss = await sg.nn.crossEntropy(await model.forward(x), y);
  await opt.zeroGrad();
  await loss.backward();
  await opt.step();
  const grad: sg.Tensor | null = await x.grad();
  const scaled = await (await x.mul(2)).add(await x.relu());  // the earlier, all-awaited style still types
  // Synchronous ops (issue 36): only reads and realize() wait.
  const step: sg.Tensor = sg.nn.crossEntropy(model.forward(x), y);
  opt.zeroGrad();
  step.backward();
  opt.step();
  const shifted: sg.Tensor = x.mul(2).add(x.relu()).sub(1);
  await sg.realize(shifted, [step]);
  const values: Float32Array | Int32Array | Uint32Array = await shifted.toArray();
  const predicted: sg.Tensor = sg.noGrad(() => model.forward(x).argmax(1));
  const accuracy: number = await sg.noGrad(async () => predicted.eq(y).mean().item());
  const mlp: sg.TileMlpResult = await sg.tileMlp({ side: 16, hidden: 16, steps: 40 });
  const fft: sg.TileFftConvResult = await sg.tileFftConv({ signals: 64, length: 64 });
  const spd: sg.TileSpdResult = await sg.tileSpd({ systems: 256, n: 8, m: 8 });
  const tiles = mlp.fused.losses[0].loss + mlp.unfused.image.length + fft.maxError + fft.fused.trainMs +
    spd.residual + spd.runs[0].dispatches;
  try {
    await sg.umap(points, 3);
  } catch (e) {
    if (e instanceof sg.SurfgradError && e.kind === 'shape') return 0;
  }
  return device.limits.maxBufferSize + map.embedding.length + t.n + npy.shape.length + (grad ? 1 : 0) +
         scaled.shape.length + (await loss.item()) + tiles + streamedSeconds + values.length + accuracy;
}
