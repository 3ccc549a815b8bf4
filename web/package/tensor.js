// Tensors with reverse-mode autodiff, nn and optim, over the library's own Var, nn and optim
// (web/src/tensor_web.cpp). Names follow PyTorch. Ops are synchronous: they check their operands
// at once (a shape error throws here) and record the work, which runs on the GPU when a value is
// read. Reads are the only waits: `await t.toArray()`, `await t.item()`, `await sg.realize(...)`;
// an error the GPU raises for a recorded op (a kernel the browser rejects, memory it refuses)
// is thrown by the next read, naming the op and its operands.
//
//   const x = sg.tensor(points, [n, 2]);
//   const model = sg.nn.mlp([2, 16, 16, 2], { seed: 1 });
//   const opt = sg.optim.adam(model, { lr: 0.05 });
//   const loss = sg.nn.crossEntropy(model.forward(x), labels);
//   opt.zeroGrad(); loss.backward(); opt.step();
//   console.log(await loss.item());
//
// Code written for the earlier API, which awaited every op, works unchanged (awaiting a value
// gives the value). Tensors hold GPU memory until dispose() (or until garbage collection finds them).
import { SurfgradError, busy, cString, fail, immediate, internalError, requireModule, resultJson, serialized } from './runtime.js';

// Releases a handle: now, or after the queued call that is running (it may be using the module).
function release(handle) {
  const { exports } = requireModule('release');
  if (busy()) serialized(() => exports.sg_release(handle));
  else exports.sg_release(handle);
}

const released = new FinalizationRegistry(release);

// Runs a synchronous export: `body(exports)` returns its result; a failed call throws its error.
function sync(what, body) {
  const { exports } = immediate(what);
  try {
    return body(exports);
  } catch (e) {
    throw internalError(what, e);
  }
}

// Runs an export that returns a handle (> 0; 0 for none), or throws its error.
function call(what, name, ...args) {
  return sync(what, (exports) => {
    const r = exports[name](...args);
    if (r < 0) throw fail(exports);
    return r;
  });
}

function op(name, a, b, args = {}) {
  return sync(name, (exports) => {
    const namePtr = cString(exports, name);
    const argsPtr = cString(exports, JSON.stringify(args));
    try {
      const h = exports.sg_tensor_op(namePtr, a ? a.handle : 0, b ? b.handle : 0, argsPtr);
      if (h < 0) throw fail(exports);
      return new Tensor(h);
    } finally {
      exports.sg_free(namePtr);
      exports.sg_free(argsPtr);
    }
  });
}

// A call that waits (a read, realize) while other calls may run: its error is kept under a
// ticket of its own and taken back right before it is read.
let tickets = 0;
function waited(what, exports, start, done) {
  const ticket = ++tickets;
  let waiting;
  try {
    waiting = start(ticket);  // a promising export: it runs up to its first wait now
  } catch (e) {
    return Promise.reject(internalError(what, e));
  }
  return waiting.then((r) => {
    if (r !== 0) {
      exports.sg_take_error(ticket);
      throw fail(exports);
    }
    return done();
  }, (e) => {
    throw internalError(what, e);
  });
}

function handleOf(x, what) {
  if (!(x instanceof Tensor)) throw new SurfgradError('value', `${what}: expected a Tensor, got ${typeof x}`);
  if (!x.handle) throw new SurfgradError('value', `${what}: the tensor was disposed`);
  return x;
}

export class Tensor {
  constructor(handle) {
    this.handle = handle;
    this._info = null;
    released.register(this, handle, this);
  }

  // {shape, dtype, requiresGrad}
  info() {
    if (!this._info) {
      const { exports } = requireModule('tensor');
      if (exports.sg_tensor_info(handleOf(this, 'info').handle) !== 0) throw fail(exports);
      this._info = resultJson(exports);
    }
    return this._info;
  }
  get shape() { return this.info().shape; }
  get dtype() { return this.info().dtype; }
  get requiresGrad() { return this.info().requiresGrad; }

  /**
   * The values, read back from the GPU (Float32Array, or Int32Array for int32 tensors). The
   * recorded ops run and the copy is queued before this returns its promise: ops recorded after
   * the call do not change what it reads. Throws the first GPU error of a recorded op.
   */
  toArray() {
    const { exports } = immediate('toArray');
    const handle = handleOf(this, 'toArray').handle;
    const numel = this.shape.reduce((a, b) => a * b, 1);
    const Out = this.dtype === 'i32' ? Int32Array : this.dtype === 'u32' ? Uint32Array : Float32Array;
    const p = exports.sg_alloc(4 * Math.max(numel, 1));
    return waited('toArray', exports, (ticket) => exports.sg_tensor_read(handle, p, ticket),
                  () => new Out(exports.memory.buffer, p, numel).slice())
      .finally(() => exports.sg_free(p));
  }
  /** The single value of a one-element tensor. */
  async item() {
    const numel = handleOf(this, 'item').shape.reduce((a, b) => a * b, 1);
    if (numel !== 1) throw new SurfgradError('shape', `item: the tensor has ${numel} elements, not 1 (shape [${this.shape}])`);
    return (await this.toArray())[0];
  }
  /** The gradient accumulated by backward(), or null before one reached this tensor. */
  grad() {
    const h = call('grad', 'sg_tensor_grad', handleOf(this, 'grad').handle);
    return h ? new Tensor(h) : null;
  }
  backward() {
    call('backward', 'sg_backward', handleOf(this, 'backward').handle);
  }
  dispose() {
    if (!this.handle) return;
    const h = this.handle;
    this.handle = 0;
    released.unregister(this);
    release(h);
  }

  // Element-wise with broadcasting; a number operand is a scalar.
  add(other) { return typeof other === 'number' ? op('add_scalar', this, null, { value: other }) : op('add', this, handleOf(other, 'add')); }
  sub(other) { return typeof other === 'number' ? op('add_scalar', this, null, { value: -other }) : op('sub', this, handleOf(other, 'sub')); }
  mul(other) { return typeof other === 'number' ? op('mul_scalar', this, null, { value: other }) : op('mul', this, handleOf(other, 'mul')); }
  div(other) { return typeof other === 'number' ? op('mul_scalar', this, null, { value: 1 / other }) : op('div', this, handleOf(other, 'div')); }
  pow(other) { return typeof other === 'number' ? op('pow_scalar', this, null, { exponent: other }) : op('pow', this, handleOf(other, 'pow')); }
  maximum(other) { return op('maximum', this, handleOf(other, 'maximum')); }
  minimum(other) { return op('minimum', this, handleOf(other, 'minimum')); }
  matmul(other) { return op('matmul', this, handleOf(other, 'matmul')); }
  // relu(this · other) as one generated tile kernel (forward and backward): the tile API's check in the browser.
  tileMatmulRelu(other) { return op('tile_matmul_relu', this, handleOf(other, 'tileMatmulRelu')); }
  eq(other) { return op('eq', this, handleOf(other, 'eq')); }

  sum(dim, keepdim = false) { return op('sum', this, null, { dim: dim ?? null, keepdim }); }
  mean(dim, keepdim = false) { return op('mean', this, null, { dim: dim ?? null, keepdim }); }
  max(dim, keepdim = false) { return op('max', this, null, { dim: dim ?? null, keepdim }); }
  min(dim, keepdim = false) { return op('min', this, null, { dim: dim ?? null, keepdim }); }
  argmax(dim) { return op('argmax', this, null, { dim }); }
  softmax(dim) { return op('softmax', this, null, { dim }); }
  logSoftmax(dim) { return op('log_softmax', this, null, { dim }); }
  reshape(...shape) { return op('reshape', this, null, { shape: shape.flat() }); }
  transpose(dim0, dim1) { return op('transpose', this, null, { dim0, dim1 }); }
  t() { return op('t', this); }
  detach() { return op('detach', this); }
}

// The unary ops of the library's op table (include/surfgrad/unary_ops.inc).
for (const name of ['neg', 'abs', 'exp', 'log', 'sqrt', 'rsqrt', 'sin', 'cos', 'tanh', 'sigmoid', 'relu', 'gelu'])
  Tensor.prototype[name] = function unary() { return op(name, this); };

/**
 * A tensor from values: a Float32Array (float32), an Int32Array (int32), or an array of numbers
 * (float32), with its shape (default: 1-D). { requiresGrad: true } makes it a leaf that
 * backward() fills with a gradient.
 */
export function tensor(values, shape, { requiresGrad = false } = {}) {
  let data = values;
  if (Array.isArray(values)) data = Float32Array.from(values.flat(Infinity));
  if (!(data instanceof Float32Array) && !(data instanceof Int32Array))
    throw new SurfgradError('dtype', 'tensor: values must be a Float32Array, an Int32Array or an array of numbers');
  shape = shape ?? [data.length];
  if (!Array.isArray(shape) || !shape.every((s) => Number.isInteger(s) && s >= 0))
    throw new SurfgradError('shape', `tensor: shape must be a list of whole numbers ≥ 0, not ${JSON.stringify(shape)}`);
  const numel = shape.reduce((a, b) => a * b, 1);
  if (numel !== data.length)
    throw new SurfgradError('shape', `tensor: ${data.length} values do not fill shape [${shape}] (${numel} elements)`);
  return sync('tensor', (exports) => {
    const dataPtr = exports.sg_alloc(4 * Math.max(numel, 1));
    const shapePtr = exports.sg_alloc(4 * Math.max(shape.length, 1));
    try {
      const Mem = data instanceof Int32Array ? Int32Array : Float32Array;
      new Mem(exports.memory.buffer, dataPtr, numel).set(data);
      new Int32Array(exports.memory.buffer, shapePtr, shape.length).set(shape);
      const h = exports.sg_tensor(dataPtr, data instanceof Int32Array ? 1 : 0, shapePtr, shape.length, requiresGrad ? 1 : 0);
      if (h < 0) throw fail(exports);
      return new Tensor(h);
    } finally {
      exports.sg_free(dataPtr);
      exports.sg_free(shapePtr);
    }
  });
}

/**
 * Runs the recorded work of `tensors` on the GPU and waits for it (for everything recorded so
 * far), throwing the first GPU error of a recorded op, named. After a device loss, starts a new
 * device (the tensors made before are gone).
 */
export function realize(...tensors) {
  const { exports } = immediate('realize');
  const handles = tensors.flat().map((t) => handleOf(t, 'realize').handle);
  const p = exports.sg_alloc(4 * Math.max(handles.length, 1));
  new Int32Array(exports.memory.buffer, p, handles.length).set(handles);
  return waited('realize', exports, (ticket) => exports.sg_realize(p, handles.length, ticket), () => undefined)
    .finally(() => exports.sg_free(p));
}

/**
 * Runs `body` with gradient recording off, as torch.no_grad(), and returns what it returns. An
 * async body (a promise) keeps recording off until it settles, and a promise is returned.
 */
export function noGrad(body) {
  const { exports } = immediate('noGrad');
  exports.sg_no_grad(1);
  let result;
  try {
    result = body();
  } catch (e) {
    exports.sg_no_grad(0);
    throw e;
  }
  if (!result || typeof result.then !== 'function') {
    exports.sg_no_grad(0);
    return result;
  }
  return Promise.resolve(result).finally(() => exports.sg_no_grad(0));
}

class Module {
  constructor(handle) {
    this.handle = handle;
    released.register(this, handle);
  }
  forward(x) {
    return new Tensor(call('forward', 'sg_module_forward', this.handle, handleOf(x, 'forward').handle));
  }
  /** [{name, tensor}] of the trainable parameters. */
  namedParameters() {
    const list = sync('namedParameters', (exports) => {
      if (exports.sg_module_parameters(this.handle) !== 0) throw fail(exports);
      return resultJson(exports);
    });
    return list.map(({ name, handle }) => ({ name, tensor: new Tensor(handle) }));
  }
}

const activations = { relu: 0, tanh: 1, gelu: 2, sigmoid: 3 };

export const nn = {
  /** A multilayer perceptron: Linear layers of the given widths with an activation between. */
  mlp(widths, { activation = 'relu', seed = 1 } = {}) {
    if (!(activation in activations))
      throw new SurfgradError('value', `nn.mlp: activation is one of ${Object.keys(activations).join(', ')}`);
    return sync('nn.mlp', (exports) => {
      const p = exports.sg_alloc(4 * widths.length);
      new Int32Array(exports.memory.buffer, p, widths.length).set(widths);
      try {
        const h = exports.sg_mlp(p, widths.length, activations[activation], seed);
        if (h < 0) throw fail(exports);
        return new Module(h);
      } finally {
        exports.sg_free(p);
      }
    });
  },
  /** Mean cross-entropy of logits [N, C] against int32 class labels [N]. */
  crossEntropy(logits, labels) { return op('cross_entropy', handleOf(logits, 'crossEntropy'), handleOf(labels, 'crossEntropy')); },
  mseLoss(prediction, target) { return op('mse_loss', handleOf(prediction, 'mseLoss'), handleOf(target, 'mseLoss')); },
};

class Optimizer {
  constructor(handle) {
    this.handle = handle;
    released.register(this, handle);
  }
  step() { call('step', 'sg_optimizer_step', this.handle); }
  zeroGrad() { call('zeroGrad', 'sg_optimizer_zero_grad', this.handle); }
  setLr(lr) { call('setLr', 'sg_optimizer_set_lr', this.handle, lr); }
}

function optimizer(kind, model, options) {
  if (!(model instanceof Module)) throw new SurfgradError('value', `optim.${kind}: expects a model from sg.nn`);
  return sync(`optim.${kind}`, (exports) => {
    const kindPtr = cString(exports, kind);
    const optionsPtr = cString(exports, JSON.stringify(options || {}));
    try {
      const h = exports.sg_optimizer(kindPtr, model.handle, optionsPtr);
      if (h < 0) throw fail(exports);
      return new Optimizer(h);
    } finally {
      exports.sg_free(kindPtr);
      exports.sg_free(optionsPtr);
    }
  });
}

export const optim = {
  /** Adam over a model's parameters: { lr = 1e-3, beta1, beta2, eps, weightDecay }. */
  adam: (model, options) => optimizer('adam', model, options),
  /** SGD over a model's parameters: { lr = 1e-2, momentum, weightDecay }. */
  sgd: (model, options) => optimizer('sgd', model, options),
};

// For the browser suite only (not exported by surfgrad.js): an op whose kernel the browser
// rejects, to check that a GPU error of a recorded op reaches the read, named.
// brokenKernel: a kernel the compiler rejects, compiled ahead (prewarmed) or at its first use,
// then used: the promise rejects with the compiler's message naming it (web/src/prewarm_web.cpp).
export const testing = {
  invalidOp: (t) => op('invalid_for_tests', handleOf(t, 'invalidOp')),
  brokenKernel: (prewarmed) => serialized(async () => {
    const { exports } = requireModule('brokenKernel');
    if (await exports.sg_test_broken_kernel(prewarmed ? 1 : 0) !== 0) throw fail(exports);
  }),
};
