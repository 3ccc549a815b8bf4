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
}

export interface InitOptions {
  /** Where surfgrad.wasm is (default: beside surfgrad.js). */
  wasmUrl?: string | URL;
  powerPreference?: 'high-performance' | 'low-power';
}

/** Loads the module and creates the WebGPU device; later calls return the same device. */
export function init(options?: InitOptions): Promise<DeviceInfo>;
/** The device init() created; throws before init(). */
export function device(): DeviceInfo;

/** A .npy file's values as float32 (any numeric dtype), its shape and dtype ('<f8', ...). */
export function readNpy(bytes: ArrayBuffer | ArrayBufferView): { data: Float32Array; shape: number[]; dtype: string };

export interface MapProgress {
  /** 'knn', 'affinities' | 'memberships', 'optimise', ... */
  phase: string;
  done: number;
  total: number;
  /** n·2 interleaved x, y: the current layout, every progressEvery optimisation steps. */
  embedding?: Float32Array;
}

export interface MapOptions {
  seed?: number;
  /** Principal components kNN runs on (default: 50 past 20,000 points, else the input itself; 0: never). */
  pcaComponents?: number;
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
  init?: 'pca' | 'random';
}

export interface UmapOptions extends MapOptions {
  nNeighbors?: number;
  minDist?: number;
  /** Default: 500 up to 10,000 points, else 200. */
  epochs?: number;
  negativeSampleRate?: number;
}

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
  wasmMemoryBytes: number;
}

export interface Points { data: Float32Array; shape: [number, number] | number[] }

/** t-SNE of n points of d values (row-major n·d). */
export function tsne(points: Float32Array | ArrayLike<number>, d: number, options?: TsneOptions): Promise<MapResult>;
export function tsne(points: Points, options?: TsneOptions): Promise<MapResult>;
/** UMAP of n points of d values (row-major n·d). */
export function umap(points: Float32Array | ArrayLike<number>, d: number, options?: UmapOptions): Promise<MapResult>;
export function umap(points: Points, options?: UmapOptions): Promise<MapResult>;

type Operand = Tensor | number;

/** A tensor on the GPU, with reverse-mode autodiff. Every op returns a promise. */
export class Tensor {
  readonly shape: number[];
  readonly dtype: 'f32' | 'i32' | 'u32' | string;
  readonly requiresGrad: boolean;
  toArray(): Promise<Float32Array | Int32Array | Uint32Array>;
  item(): Promise<number>;
  grad(): Promise<Tensor | null>;
  backward(): Promise<void>;
  dispose(): void;
  add(other: Operand): Promise<Tensor>;
  sub(other: Operand): Promise<Tensor>;
  mul(other: Operand): Promise<Tensor>;
  div(other: Operand): Promise<Tensor>;
  pow(other: Operand): Promise<Tensor>;
  maximum(other: Tensor): Promise<Tensor>;
  minimum(other: Tensor): Promise<Tensor>;
  matmul(other: Tensor): Promise<Tensor>;
  /** relu(this · other), [M, K] · [K, N], as one tile kernel (forward and generated backward). */
  tileMatmulRelu(other: Tensor): Promise<Tensor>;
  eq(other: Tensor): Promise<Tensor>;
  sum(dim?: number | number[], keepdim?: boolean): Promise<Tensor>;
  mean(dim?: number | number[], keepdim?: boolean): Promise<Tensor>;
  max(dim?: number | number[], keepdim?: boolean): Promise<Tensor>;
  min(dim?: number | number[], keepdim?: boolean): Promise<Tensor>;
  argmax(dim: number): Promise<Tensor>;
  softmax(dim: number): Promise<Tensor>;
  logSoftmax(dim: number): Promise<Tensor>;
  reshape(...shape: number[] | [number[]]): Promise<Tensor>;
  transpose(dim0: number, dim1: number): Promise<Tensor>;
  t(): Promise<Tensor>;
  detach(): Promise<Tensor>;
  neg(): Promise<Tensor>;
  abs(): Promise<Tensor>;
  exp(): Promise<Tensor>;
  log(): Promise<Tensor>;
  sqrt(): Promise<Tensor>;
  rsqrt(): Promise<Tensor>;
  sin(): Promise<Tensor>;
  cos(): Promise<Tensor>;
  tanh(): Promise<Tensor>;
  sigmoid(): Promise<Tensor>;
  relu(): Promise<Tensor>;
  gelu(): Promise<Tensor>;
}

/** A tensor from values (Float32Array → float32, Int32Array → int32, number[] → float32). */
export function tensor(values: Float32Array | Int32Array | number[], shape?: number[],
                       options?: { requiresGrad?: boolean }): Promise<Tensor>;
/** Runs body with gradient recording off. */
export function noGrad<T>(body: () => T | Promise<T>): Promise<T>;

export interface Module {
  forward(x: Tensor): Promise<Tensor>;
  namedParameters(): Promise<{ name: string; tensor: Tensor }[]>;
}
export interface Optimizer {
  step(): Promise<void>;
  zeroGrad(): Promise<void>;
  setLr(lr: number): Promise<void>;
}

export const nn: {
  mlp(widths: number[], options?: { activation?: 'relu' | 'tanh' | 'gelu' | 'sigmoid'; seed?: number }): Promise<Module>;
  crossEntropy(logits: Tensor, labels: Tensor): Promise<Tensor>;
  mseLoss(prediction: Tensor, target: Tensor): Promise<Tensor>;
};
export const optim: {
  adam(model: Module, options?: { lr?: number; beta1?: number; beta2?: number; eps?: number; weightDecay?: number }): Promise<Optimizer>;
  sgd(model: Module, options?: { lr?: number; momentum?: number; weightDecay?: number }): Promise<Optimizer>;
};
