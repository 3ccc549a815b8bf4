// Types of surfgrad's JavaScript API (web/package/surfgrad.js).

/** The kinds of SurfgradError (the C++ library's surfgrad::ErrorKind). */
export type ErrorKind =
  | 'shape' | 'dtype' | 'value' | 'index' | 'memory' | 'limit' | 'unsupported' | 'shader'
  | 'device-lost' | 'device' | 'io' | 'cancelled' | 'internal';

/** Every error surfgrad raises; the message is the library's (as in the CLI and Python). */
export class SurfgradError extends Error {
  readonly kind: ErrorKind;
}

export interface DeviceInfo {
  adapter: string;
  vendor: string;
  architecture: string;
  description: string;
  /** Always 'webgpu' in the browser. */
  backend: string;
  adapterType: string;
  implementation: string;
  features: string[];
  shaderF16: boolean;
  subgroups: boolean;
  subgroupMinSize: number;
  subgroupMaxSize: number;
  timestampQuery: boolean;
  limits: Record<string, number>;
  /**
   * What init() took, in ms: `compile` (the wasm fetched and compiled) and `adapter` (the adapter
   * requested) since init() began (they run at once), then `instantiate` and `context` (the
   * device (requested while the wasm compiles: `devicePrefetch` 'used', or why not) and the
   * library's context), and `total`.
   */
  initMs: { compile: number; adapter: number; instantiate: number; context: number; total: number;
            devicePrefetch: string };
}

export interface InitOptions {
  /** Where surfgrad.wasm is (default: beside surfgrad.js). */
  wasmUrl?: string | URL;
  /**
   * surfgrad.wasm already compiled (or its compile under way), e.g. by a page's first script
   * with WebAssembly.compileStreaming and posted to the worker that calls init(): used instead
   * of fetching wasmUrl (initMs.compile is then the wait for it).
   */
  wasmModule?: WebAssembly.Module | Promise<WebAssembly.Module>;
  powerPreference?: 'high-performance' | 'low-power';
  /**
   * Compile a map's kernels ahead, on the GPU process's workers, while its points load
   * (default true); false: each compiles at its first use (still asynchronously).
   */
  prewarm?: boolean;
}

/** Loads the module and creates the WebGPU device; later calls return the same device. */
export function init(options?: InitOptions): Promise<DeviceInfo>;
/** The device init() created; throws before init(). */
export function device(): DeviceInfo;

/** A .npy file's values as float32 (any numeric dtype), its shape and dtype ('<f8', ...). */
export function readNpy(bytes: ArrayBuffer | ArrayBufferView): { data: Float32Array; shape: number[]; dtype: string };

export interface MapProgress {
  /** 'upload' (a point source's rows: done of total), 'knn', 'affinities' | 'memberships', 'optimise', ... */
  phase: string;
  done: number;
  total: number;
  /** n·2 interleaved x, y: the current layout, every progressEvery optimisation steps. */
  embedding?: Float32Array;
}

/** Options of every method (the library's schema: mapOptionSchema() has each one's range and default). */
export interface MapOptions {
  seed?: number;
  /** 'euclidean' (default) or 'cosine' (rows scaled to unit length first). */
  metric?: 'euclidean' | 'cosine';
  /** Principal components kNN runs on (-1 default: 50 past 20,000 points or, on CPU adapters such as SwiftShader, 100 past 200 dimensions and 200 points; else the input itself; 0: never). */
  pcaComponents?: number;
  /** Exact kNN, neighbour descent, or auto (by size and adapter). */
  knn?: 'auto' | 'exact' | 'descent';
  /** Points on which approximate kNN's recall is measured (0: skip). */
  recallSample?: number;
  /** The start: the first two principal components (default) or seeded random positions. */
  init?: 'pca' | 'random';
  /** Optimisation steps between layouts in progress events (default 10 with onProgress, 0: none). */
  progressEvery?: number;
  /** Called during the work; return true to cancel. */
  onProgress?: (progress: MapProgress) => boolean | void;
  signal?: AbortSignal;
}

export interface TsneOptions extends MapOptions {
  perplexity?: number;
  iterations?: number;
  earlyExaggeration?: number;
  exaggerationIterations?: number;
  learningRate?: number | 'auto';
  maxStepNorm?: number;
  repulsion?: 'auto' | 'exact' | 'fft';
  gridSpacing?: number;
}

export interface UmapOptions extends MapOptions {
  nNeighbors?: number;
  minDist?: number;
  /** Default ('auto' or 0): 500 up to 10,000 points, else 200. */
  epochs?: number | 'auto';
  learningRate?: number;
  negativeSampleRate?: number;
}

/** One map option of the library's schema (the same records as `surfgrad map --help`). */
export interface MapOptionSpec {
  key: string;
  cli: string;
  js: string;
  python: string;
  /** 'tsne', 'umap', or '' for every method. */
  method: string;
  type: 'integer' | 'number' | 'choice';
  default: string;
  range: string;
  automatic: boolean;
  automaticDoc: string;
  doc: string;
  upperWhy: string;
  choices?: string[];
  lo?: number;
  hi?: number;
  loOpen?: boolean;
  hiOpen?: boolean;
}

/** The map options' schema. */
export function mapOptionSchema(): MapOptionSpec[];

export interface MapResult {
  /** n·2 interleaved x, y. */
  embedding: Float32Array;
  n: number;
  /** Seconds per phase, by the library's phase names. */
  timings: Record<string, number>;
  phases: { name: string; seconds: number }[];
  k: number;
  pcaComponents: number;
  approximateKnn: boolean;
  /** Sampled recall of the approximate kNN (absent when kNN was exact). */
  knnRecall?: number;
  gpuPeakBytes: number;
  /** The WebAssembly memory's size after the map (it never shrinks). */
  wasmMemoryBytes: number;
  /** builtinPoints(): the labels the library gave the points (n int32, i mod 10). */
  labels?: Int32Array;
}

export interface Points { data: Float32Array; shape: [number, number] | number[] }

/**
 * Points streamed into the GPU in row blocks, never whole in JavaScript or the wasm heap: each
 * block holds whole rows, row-major, in order (a view into a bigger buffer is fine), n rows in
 * all. The map's timings gain `upload` (seconds reading and uploading the blocks). Producing a
 * block must not call surfgrad (the module runs one call at a time).
 */
export interface PointSource {
  n: number;
  d: number;
  blocks: AsyncIterable<Float32Array> | Iterable<Float32Array>;
  /** Tests only: rows per GPU block (default: a quarter of the adapter's binding limit). */
  gpuBlockRows?: number;
}

/** builtinPoints(n): `surfgrad map`'s built-in clusters, generated on the GPU when mapped. */
export interface BuiltinPoints {
  n: number;
  d: 768;
  /** Point i's cluster: i mod 10. */
  labels: Int32Array;
  builtin: true;
}

/** The built-in data set (10 Gaussian clusters in 768-D, as `surfgrad map --points n`): no upload; timings.generate. */
export function builtinPoints(n: number): BuiltinPoints;

/** A .npy file read as a PointSource: the header now, rows in blocks of ~16 MiB (Blob.slice) as float32. */
export function npyPoints(file: Blob | ArrayBuffer, options?: { blockBytes?: number }):
  Promise<PointSource & { shape: [number, number]; dtype: string }>;

/** t-SNE of n points of d values (row-major n·d), or of a point source. */
export function tsne(points: Float32Array | ArrayLike<number>, d: number, options?: TsneOptions): Promise<MapResult>;
export function tsne(points: Points | PointSource | BuiltinPoints, options?: TsneOptions): Promise<MapResult>;
/** UMAP of n points of d values (row-major n·d), or of a point source. */
export function umap(points: Float32Array | ArrayLike<number>, d: number, options?: UmapOptions): Promise<MapResult>;
export function umap(points: Points | PointSource | BuiltinPoints, options?: UmapOptions): Promise<MapResult>;

type Operand = Tensor | number;

/**
 * A tensor on the GPU, with reverse-mode autodiff. Ops are synchronous: they check their operands
 * at once (throwing SurfgradError) and record the work; only reads wait (toArray(), item(),
 * realize()), and a GPU error of a recorded op is thrown by the next read, naming the op.
 * Awaiting an op's result (the earlier, all-async API) still works: it is the value.
 */
export class Tensor {
  readonly shape: number[];
  readonly dtype: 'f32' | 'i32' | 'u32' | string;
  readonly requiresGrad: boolean;
  toArray(): Promise<Float32Array | Int32Array | Uint32Array>;
  item(): Promise<number>;
  grad(): Tensor | null;
  backward(): void;
  dispose(): void;
  add(other: Operand): Tensor;
  sub(other: Operand): Tensor;
  mul(other: Operand): Tensor;
  div(other: Operand): Tensor;
  pow(other: Operand): Tensor;
  maximum(other: Tensor): Tensor;
  minimum(other: Tensor): Tensor;
  matmul(other: Tensor): Tensor;
  /** relu(this · other), [M, K] · [K, N], as one tile kernel (forward and generated backward). */
  tileMatmulRelu(other: Tensor): Tensor;
  eq(other: Tensor): Tensor;
  sum(dim?: number | number[], keepdim?: boolean): Tensor;
  mean(dim?: number | number[], keepdim?: boolean): Tensor;
  max(dim?: number | number[], keepdim?: boolean): Tensor;
  min(dim?: number | number[], keepdim?: boolean): Tensor;
  argmax(dim: number): Tensor;
  softmax(dim: number): Tensor;
  logSoftmax(dim: number): Tensor;
  reshape(...shape: number[] | [number[]]): Tensor;
  transpose(dim0: number, dim1: number): Tensor;
  t(): Tensor;
  detach(): Tensor;
  neg(): Tensor;
  abs(): Tensor;
  exp(): Tensor;
  log(): Tensor;
  sqrt(): Tensor;
  rsqrt(): Tensor;
  sin(): Tensor;
  cos(): Tensor;
  tanh(): Tensor;
  sigmoid(): Tensor;
  relu(): Tensor;
  gelu(): Tensor;
}

/** A tensor from values (Float32Array → float32, Int32Array → int32, number[] → float32). */
export function tensor(values: Float32Array | Int32Array | number[], shape?: number[],
                       options?: { requiresGrad?: boolean }): Tensor;
/**
 * Runs the recorded work of the tensors and waits for the GPU (for everything recorded so far);
 * rejects with the first GPU error of a recorded op, naming it.
 */
export function realize(...tensors: (Tensor | Tensor[])[]): Promise<void>;
/** Runs body with gradient recording off and returns its result (an async body: until it settles). */
export function noGrad<T>(body: () => T): T;

export interface Module {
  forward(x: Tensor): Tensor;
  namedParameters(): { name: string; tensor: Tensor }[];
}
export interface Optimizer {
  step(): void;
  zeroGrad(): void;
  setLr(lr: number): void;
}

export const nn: {
  mlp(widths: number[], options?: { activation?: 'relu' | 'tanh' | 'gelu' | 'sigmoid'; seed?: number }): Module;
  crossEntropy(logits: Tensor, labels: Tensor): Tensor;
  mseLoss(prediction: Tensor, target: Tensor): Tensor;
};
export const optim: {
  adam(model: Module, options?: { lr?: number; beta1?: number; beta2?: number; eps?: number; weightDecay?: number }): Optimizer;
  sgd(model: Module, options?: { lr?: number; momentum?: number; weightDecay?: number }): Optimizer;
};

/**
 * The tile examples (issue 15): each runs its fused tile kernels beside the same computation
 * unfused, on the page's WebGPU, through the library's demos. A size past the device's workgroup
 * memory is a SurfgradError of kind 'limit' naming the options to shrink; a bad option, 'value'.
 */
export interface TileMlpOptions {
  /** The image is side × side pixels (default 16), every pixel in every step. */
  side?: number;
  /** Hidden width (default 16) and hidden layers (default 2). */
  hidden?: number;
  layers?: number;
  /** Pixels per workgroup of the fused kernel (default 8) and its workgroup size (default 64); 0:
   * chosen for the adapter (16 and 512 where workgroup memory holds the kernel, else 8 and 128). */
  tileRows?: number;
  threads?: number;
  /** Adam steps (default 60, at least 2) and learning rate (default 0.01). */
  steps?: number;
  lr?: number;
  seed?: number;
  /** The fused kernels' weights: 'f16' (an f16 copy of the f32 parameters each step; gradient and
   * Adam in f32), 'f32', or 'auto' (default): f16 where the adapter has shader-f16. */
  weights?: 'auto' | 'f16' | 'f32';
}
export interface TileMlpForm {
  /** The loss at the initial parameters (the same for both forms) and after the last step. */
  firstLoss: number;
  finalLoss: number;
  /** The loss of step 1, then of the last step of each timed group. */
  losses: { step: number; loss: number }[];
  /** Of the fitted image against the target, dB. */
  psnr: number;
  msPerStep: number;
  dispatchesPerStep: number;
  /** The weights the kernels read: 'f16' or 'f32' (always 'f32' unfused). */
  weights: 'f16' | 'f32';
  /** ∂loss/∂parameters at the initial parameters, packed [rows, hidden] (per layer its weight rows, then its bias row). */
  firstGradient: Float32Array;
  /** The fitted image, side × side RGB in [0, 1], row 0 at the bottom. */
  image: Float32Array;
}
export interface TileMlpResult {
  side: number;
  /** max |fused − unfused| over firstGradient, and max |unfused| there. */
  gradientDifference: number;
  gradientScale: number;
  /** Workgroup memory of the fused backward kernel. */
  workgroupBytes: number;
  fused: TileMlpForm;
  unfused: TileMlpForm;
  /** The fused kernels' generated code. */
  wgsl: { forward: string; backward: string };
}
/** An MLP learns an image (coordinates → colour): fused tile kernels, and the same network on ordinary ops. */
export function tileMlp(options?: TileMlpOptions): Promise<TileMlpResult>;

export interface TileFftConvOptions {
  /** Signals (default 64, even: transformed in pairs) of `length` samples (default 64, a power of two). */
  signals?: number;
  length?: number;
  /** Filter taps, ≤ length (default 16; zero-padded, circular convolution). */
  taps?: number;
  /** Signal pairs per workgroup (default 0: the most that fit). */
  tileRows?: number;
  threads?: number;
  /** Steps per timed group, five groups (default 2). */
  steps?: number;
  seed?: number;
}
export interface TileFftConvTiming {
  /** Wall clock per step: forward, and forward + backward. */
  forwardMs: number;
  trainMs: number;
  forwardDispatches: number;
  trainDispatches: number;
  /** Global memory traffic per step (a model). */
  forwardBytes: number;
  trainBytes: number;
}
export interface TileFftConvResult {
  /** max |y − y_float64| over 5 signals (direct convolution) by each form, and the outputs' scale there. */
  maxError: number;
  unfusedMaxError: number;
  outputScale: number;
  /** max |fused − unfused| over the gradients of the signals and the filter. */
  gradDifference: number;
  tileRows: number;
  workgroupBytes: number;
  fused: TileFftConvTiming;
  unfused: TileFftConvTiming;
  wgsl: { forward: string; backward: string };
}
/** FFT convolution of a batch of signals with one filter: one fused tile kernel each way, and four. */
export function tileFftConv(options?: TileFftConvOptions): Promise<TileFftConvResult>;

export interface TileSpdOptions {
  /** Systems (default 256), each n unknowns (default 8), m rows of J (default 8), rhs columns of f (default 1). */
  systems?: number;
  n?: number;
  m?: number;
  rhs?: number;
  threads?: number;
  /** Solves per timed group (default 1) and timed groups (default 3; the median is reported). */
  steps?: number;
  repeats?: number;
  seed?: number;
}
export interface TileSpdRun {
  form: 'fused' | 'unfused';
  backward: boolean;
  /** Per solve (forward, or forward + backward), median over the groups. */
  ms: number;
  dispatches: number;
  kernels: number;
  bytes: number;
}
export interface TileSpdResult {
  /** max over systems of ‖H·x − f‖/‖f‖, H = JᵀMJ + diag R formed in float64, x the fused solve. */
  residual: number;
  /** max |x_fused − x_unfused| / max |x|. */
  unfusedDifference: number;
  /** max |∂fused − ∂unfused| / max |∂unfused| over the gradients of J, M, R and f; −1 where a backward kernel does not fit. */
  gradientDifference: number;
  workgroupBytesForward: number;
  workgroupBytesBackward: number;
  unfusedWorkgroupBytesBackward: number;
  /** fused, fused + backward, unfused, unfused + backward (a backward run left out where it does not fit: see note). */
  runs: TileSpdRun[];
  note: string;
  wgsl: { forward: string; backward: string };
}
/** Batched SPD solves x = (JᵀMJ + diag R)⁻¹·f by Cholesky: one fused tile kernel per system, and four launches. */
export function tileSpd(options?: TileSpdOptions): Promise<TileSpdResult>;

/** benchMatmul's options: sizes 'MxNxK,...' (default '1024x1024x1024'), rung names (default
 * 'f16-tuned-tiled,f16-sgmat-direct', as `surfgrad bench matmul --variants`), timed runs (default 10). */
export interface BenchMatmulOptions {
  sizes?: string;
  variants?: string;
  reps?: number;
}
/** One rung at one size: timed (ms, tflops) when its error was within tolerance; else why not. */
export interface BenchMatmulRow {
  size: string;
  variant: string;
  skipped?: string;
  failed?: string;
  valid?: boolean;
  maxError?: number;
  tolerance?: number;
  ms?: number;
  tflops?: number;
}
export interface BenchMatmulResult {
  adapter: string;
  /** Whether the device has Chromium's subgroup matrices (tensor cores). */
  subgroupMatrix: boolean;
  subgroupMatrixConfigs: { component: string; result: string; M: number; N: number; K: number }[];
  rows: BenchMatmulRow[];
}
/** Matmul rungs measured on the page's WebGPU exactly as `surfgrad bench matmul` measures them natively. */
export function benchMatmul(options?: BenchMatmulOptions): Promise<BenchMatmulResult>;
