// Tensors with autograd, nn and optim for JavaScript (web/package/tensor.js): handles into the
// tables below. Every op is the library's own (Var and its op table), named as in PyTorch; this
// file only resolves handles and arguments. Handles are positive integers shared by tensors,
// modules and optimizers; JavaScript releases them (dispose() or its FinalizationRegistry).
//
// Synchronous calls (issue 36): every export here but sg_tensor_read and sg_realize is a plain
// WebAssembly call, which may not suspend, so none may wait on the GPU. Within them (SyncCall)
// the tensor ops record lazily (elementwise chains become one kernel when needed), and GPU errors
// (a kernel the browser rejects, an allocation it refuses) are deferred under the op's name
// (gpu::Context::defer_errors); sg_tensor_read and sg_realize wait, and throw the first such
// error, naming the op. Shapes, dtypes and arguments are checked at once, as before.
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "surfgrad/autograd.hpp"
#include "surfgrad/error.hpp"
#include "surfgrad/nn.hpp"
#include "surfgrad/optim.hpp"
#include "surfgrad/tensor.hpp"
#include "surfgrad/tiles.hpp"
#include "tensor/lazy.hpp"
#include "web_session.hpp"

#define SG_EXPORT(name) extern "C" __attribute__((export_name(#name)))

using namespace surfgrad;
using surfgrad::web::guarded;
using surfgrad::web::session;

namespace {

struct Handles {
  int32_t next = 1;
  std::unordered_map<int32_t, Var> vars;
  std::unordered_map<int32_t, std::shared_ptr<nn::Module>> modules;
  std::unordered_map<int32_t, std::unique_ptr<optim::Optimizer>> optimizers;
  std::optional<NoGradGuard> no_grad;

  int32_t add(Var v) {
    vars.emplace(next, std::move(v));
    return next++;
  }
  const Var& var(int32_t h, const char* op) const {
    auto it = vars.find(h);
    if (it == vars.end())
      throw Error(ErrorKind::Value, std::string(op) + ": tensor handle " + std::to_string(h) +
                                        " is not live (disposed, or from another module instance)");
    return it->second;
  }
  nn::Module& module(int32_t h, const char* op) const {
    auto it = modules.find(h);
    if (it == modules.end())
      throw Error(ErrorKind::Value, std::string(op) + ": module handle " + std::to_string(h) + " is not live");
    return *it->second;
  }
  optim::Optimizer& optimizer(int32_t h, const char* op) const {
    auto it = optimizers.find(h);
    if (it == optimizers.end())
      throw Error(ErrorKind::Value, std::string(op) + ": optimizer handle " + std::to_string(h) + " is not live");
    return *it->second;
  }
};

Handles& handles() {
  static Handles h;
  return h;
}

// The state of one synchronous call: GPU errors deferred under `label`, ops recorded lazily.
// The device must exist (creating one waits): after a loss, a call that may wait makes the next.
class SyncCall {
 public:
  explicit SyncCall(const std::string& label) : ctx_(device(label)), lazy_(lazy_mode()) {
    previous_ = ctx_->defer_errors(label);
    set_lazy(true);
  }
  ~SyncCall() {
    set_lazy(lazy_);
    ctx_->defer_errors(std::move(previous_));
  }
  SyncCall(const SyncCall&) = delete;
  SyncCall& operator=(const SyncCall&) = delete;
  const gpu::ContextPtr& context() const { return ctx_; }

 private:
  static gpu::ContextPtr device(const std::string& label) {
    gpu::ContextPtr ctx = session().ctx;
    if (ctx && !ctx->device_lost()) return ctx;
    throw Error(ErrorKind::DeviceLost, label +
                                           ": the WebGPU device was lost, and every tensor with it. await sg.realize() "
                                           "starts a new device; then make the tensors again");
  }
  gpu::ContextPtr ctx_;
  bool lazy_;
  std::string previous_;
};

std::vector<int> int_list(const nlohmann::json& args, const char* key, const std::string& op) {
  std::vector<int> out;
  auto it = args.find(key);
  if (it == args.end() || it->is_null()) return out;
  if (it->is_number_integer()) return {it->get<int>()};
  if (!it->is_array()) throw Error(ErrorKind::Value, op + ": '" + key + "' must be an integer or a list of integers");
  for (auto& v : *it) {
    if (!v.is_number_integer()) throw Error(ErrorKind::Value, op + ": '" + key + "' must hold integers");
    out.push_back(v.get<int>());
  }
  return out;
}

int int_arg(const nlohmann::json& args, const char* key, const std::string& op) {
  auto it = args.find(key);
  if (it == args.end() || !it->is_number_integer())
    throw Error(ErrorKind::Value, op + ": needs an integer '" + key + "'");
  return it->get<int>();
}

double number_arg(const nlohmann::json& args, const char* key, const std::string& op,
                  std::optional<double> fallback = {}) {
  auto it = args.find(key);
  if (it == args.end() || it->is_null()) {
    if (fallback) return *fallback;
    throw Error(ErrorKind::Value, op + ": needs a number '" + key + "'");
  }
  if (!it->is_number()) throw Error(ErrorKind::Value, op + ": '" + key + "' must be a number");
  return it->get<double>();
}

using Unary = Var (Var::*)() const;
const std::map<std::string, Unary>& unary_ops() {
  static const std::map<std::string, Unary> ops = {
#define SURFGRAD_UNARY(name) {#name, &Var::name},
#include "surfgrad/unary_ops.inc"
#undef SURFGRAD_UNARY
  };
  return ops;
}

using Binary = Var (*)(const Var&, const Var&);
const std::map<std::string, Binary>& binary_ops() {
  static const std::map<std::string, Binary> ops = {
#define SURFGRAD_BINARY(name) {#name, &name},
#define SURFGRAD_COMPARISON(name)
#include "surfgrad/binary_ops.inc"
#undef SURFGRAD_COMPARISON
#undef SURFGRAD_BINARY
      {"matmul", &matmul}};
  return ops;
}

// relu(x · w) as one tile kernel (surfgrad/tiles.hpp): a workgroup loads a 16-row block of x and
// all of w into workgroup memory, multiplies and stores; its backward is the generated kernel.
// The browser's check that tile programs run on the page's WebGPU. Tile shapes are constants of
// the WGSL, so a kernel is built (and cached) per inner and output width; one that does not fit
// the device's workgroup memory is refused by the kernel's own check, naming it.
Var tile_matmul_relu(const Var& x, const Var& w) {
  if (x.rank() != 2 || w.rank() != 2 || x.shape(1) != w.shape(0))
    throw Error(ErrorKind::Shape, "tileMatmulRelu: x must be [M, K] and w [K, N], got " + x.value().describe() +
                                      " and " + w.value().describe());
  constexpr int kRows = 16;
  const int K = int(x.shape(1)), N = int(w.shape(1));
  static std::map<std::pair<int, int>, tiles::Kernel> cache;
  auto it = cache.find({K, N});
  if (it == cache.end()) {
    tiles::Kernel k("tile_matmul_relu_" + std::to_string(K) + "x" + std::to_string(N), 64);
    tiles::Array xa = k.input("x"), wa = k.input("w"), ya = k.output("y");
    tiles::Coord row = tiles::Coord::block(0);
    tiles::Tile xt = tiles::tile_load(xa, {kRows, K}, {row, 0});
    tiles::Tile wt = tiles::tile_load(wa, {K, N});
    tiles::tile_store(ya, tiles::tile_map(tiles::Unary::relu, tiles::tile_matmul(xt, wt)), {row, 0});
    it = cache.emplace(std::make_pair(K, N), std::move(k)).first;
  }
  uint32_t blocks = uint32_t((x.shape(0) + kRows - 1) / kRows);
  return it->second(std::vector<Var>{x, w}, {x.shape(0), int64_t(N)}, {blocks, 1, 1});
}

// For the browser suite only (tensor.js's `testing`): records an elementwise op whose kernel the
// browser's WGSL compiler rejects, as a real GPU error of a recorded op that passed its checks.
Var invalid_for_tests(const Var& a) {
  const Tensor& x = a.value();
  return Var(lazy_record(x.context(), "invalid_for_tests", x.shape(), DType::f32, {x}, {"a"},
                         "a + no_such_function_for_tests(a)"));
}

// "matmul of f32[2, 3] and f32[3, 4]": what a deferred GPU error names.
std::string describe_op(const std::string& op, int32_t a, int32_t b) {
  const Handles& H = handles();
  std::string s = op;
  auto ia = H.vars.find(a), ib = H.vars.find(b);
  if (ia != H.vars.end()) s += " of " + ia->second.value().describe();
  if (ib != H.vars.end()) s += " and " + ib->second.value().describe();
  return s;
}

// One op by name: a (and b) are tensor handles, args a JSON object of the op's other arguments.
Var apply(const std::string& op, int32_t a_handle, int32_t b_handle, const nlohmann::json& args) {
  Handles& H = handles();
  const Var& a = H.var(a_handle, op.c_str());
  if (auto it = unary_ops().find(op); it != unary_ops().end()) return (a.*(it->second))();
  if (auto it = binary_ops().find(op); it != binary_ops().end()) return it->second(a, H.var(b_handle, op.c_str()));
  std::vector<int> axes = int_list(args, "dim", op);
  bool keepdim = args.value("keepdim", false);
  if (op == "sum") return a.sum(axes, keepdim);
  if (op == "mean") return a.mean(axes, keepdim);
  if (op == "max") return a.max(axes, keepdim);
  if (op == "min") return a.min(axes, keepdim);
  if (op == "softmax") return a.softmax(int_arg(args, "dim", op));
  if (op == "log_softmax") return a.log_softmax(int_arg(args, "dim", op));
  if (op == "transpose") return a.transpose(int_arg(args, "dim0", op), int_arg(args, "dim1", op));
  if (op == "t") return a.t();
  if (op == "pow_scalar") return a.pow(number_arg(args, "exponent", op));
  if (op == "add_scalar") return a + number_arg(args, "value", op);
  if (op == "mul_scalar") return a * number_arg(args, "value", op);
  if (op == "reshape") {
    Shape shape;
    for (int s : int_list(args, "shape", op)) shape.push_back(s);
    return a.reshape(shape);
  }
  if (op == "argmax") return Var(a.value().argmax(int_arg(args, "dim", op)));
  if (op == "cross_entropy") return nn::cross_entropy(a, H.var(b_handle, op.c_str()).value());
  if (op == "mse_loss") return nn::mse_loss(a, H.var(b_handle, op.c_str()).value());
  if (op == "eq") return Var(eq(a.value(), H.var(b_handle, op.c_str()).value()).cast(DType::f32));
  if (op == "detach") return a.detach();
  if (op == "tile_matmul_relu") return tile_matmul_relu(a, H.var(b_handle, op.c_str()));
  if (op == "invalid_for_tests") return invalid_for_tests(a);
  throw Error(ErrorKind::Value, "unknown tensor op '" + op + "'");
}

}  // namespace

// A tensor from host data: dtype 0 float32, 1 int32. Returns its handle, or -1.
SG_EXPORT(sg_tensor)
int32_t sg_tensor(const void* data, int32_t dtype, const int32_t* shape, int32_t rank, int32_t requires_grad) {
  int32_t handle = -1;
  guarded([&] {
    if (rank < 0 || rank > 8) throw Error(ErrorKind::Shape, "tensor: rank must be 0–8, not " + std::to_string(rank));
    Shape s(shape, shape + rank);
    for (int64_t d : s)
      if (d < 0) throw Error(ErrorKind::Shape, "tensor: a dimension is negative");
    if (dtype != 0 && dtype != 1) throw Error(ErrorKind::DType, "tensor: dtype must be float32 or int32");
    if (requires_grad && dtype != 0) throw Error(ErrorKind::DType, "tensor: only float32 tensors can require grad");
    SyncCall call("tensor " + shape_str(s));
    Tensor t = Tensor::from_host(call.context(), data, s, dtype == 0 ? DType::f32 : DType::i32);
    handle = handles().add(Var(std::move(t), requires_grad != 0));
  });
  return handle;
}

// {shape, dtype, requiresGrad} of a tensor in sg_result_json().
SG_EXPORT(sg_tensor_info) int sg_tensor_info(int32_t h) {
  return guarded([&] {
    const Var& v = handles().var(h, "tensor");
    session().result_json =
        nlohmann::json({{"shape", v.shape()}, {"dtype", dtype_name(v.dtype())}, {"requiresGrad", v.requires_grad()}})
            .dump();
  });
}

// Waits for the GPU errors deferred so far and throws the first, naming its op. `failed`: the
// error the wait itself met, which an earlier op's error explains (a rejected kernel makes every
// later submission fail), so that one is thrown first.
void settle(const gpu::ContextPtr& ctx, const std::exception_ptr& failed = nullptr) {
  ctx->settle_deferred_errors();
  if (failed) std::rethrow_exception(failed);
}

// The errors of waiting calls, by the ticket JavaScript gave the call: other calls run while
// one waits, and each starts by clearing the session's error, so a waiting call's error is kept
// here until JavaScript takes it (sg_take_error) right before reading it.
std::unordered_map<int32_t, std::pair<int, std::string>>& waited_errors() {
  static std::unordered_map<int32_t, std::pair<int, std::string>> errors;
  return errors;
}
int keep_error(int32_t ticket, int result) {
  if (result != 0) waited_errors()[ticket] = {session().error_kind, session().error_message};
  return result;
}

// Copies a tensor's values (numel × 4 bytes, float32 or int32) to `out`. A promising export: it
// waits for the GPU. Everything up to the wait (the recorded ops run, the copy queued) happens
// before JavaScript's toArray() returns its promise, so later synchronous ops cannot change the
// values read; they may run while this waits (the wait touches nothing they use).
SG_EXPORT(sg_tensor_read) int sg_tensor_read(int32_t h, void* out, int32_t ticket) {
  return keep_error(ticket, guarded([&] {
                      Tensor t = handles().var(h, "toArray").value();
                      gpu::ContextPtr ctx = t.context();
                      {
                        SyncCall call("toArray of " + t.describe());
                        if (t.dtype() != DType::f32 && t.dtype() != DType::i32 && t.dtype() != DType::u32)
                          t = t.cast(DType::f32);
                        t = t.contiguous();
                        t.realize();
                      }
                      std::exception_ptr failed;
                      try {
                        t.to_host(out);
                      } catch (const Error&) {
                        failed = std::current_exception();
                      }
                      settle(ctx, failed);
                    }));
}

// Runs the recorded work of the given tensors, waits for the GPU (for everything submitted) and
// throws the first deferred error. After a device loss it starts a new device instead.
SG_EXPORT(sg_realize) int sg_realize(const int32_t* hs, int32_t count, int32_t ticket) {
  return keep_error(ticket, guarded([&] {
                      gpu::ContextPtr ctx = session().ctx;
                      if (!ctx || ctx->device_lost()) {
                        session().context();
                        return;
                      }
                      {
                        SyncCall call("realize");
                        for (int32_t i = 0; i < count; ++i) handles().var(hs[i], "realize").value().realize();
                      }
                      std::exception_ptr failed;
                      try {
                        ctx->sync();
                      } catch (const Error&) {
                        failed = std::current_exception();
                      }
                      settle(ctx, failed);
                    }));
}

// Puts a waiting call's kept error back as the session's (sg_error_kind/sg_error_message).
SG_EXPORT(sg_take_error) void sg_take_error(int32_t ticket) {
  auto it = waited_errors().find(ticket);
  if (it == waited_errors().end()) return;
  session().fail(it->second.first, it->second.second);
  waited_errors().erase(it);
}

// A new handle for a tensor's gradient; 0 when it has none yet.
SG_EXPORT(sg_tensor_grad) int32_t sg_tensor_grad(int32_t h) {
  int32_t handle = -1;
  guarded([&] {
    SyncCall call("grad");
    Tensor g = handles().var(h, "tensor.grad").grad();
    handle = g.defined() ? handles().add(Var(g)) : 0;
  });
  return handle;
}

SG_EXPORT(sg_tensor_op) int32_t sg_tensor_op(const char* op, int32_t a, int32_t b, const char* args_json) {
  int32_t handle = -1;
  guarded([&] {
    nlohmann::json args = nlohmann::json::parse(args_json ? args_json : "{}", nullptr, false);
    if (args.is_discarded() || !args.is_object()) throw Error(ErrorKind::Value, std::string(op) + ": bad arguments");
    SyncCall call(describe_op(op, a, b));
    handle = handles().add(apply(op, a, b, args));
  });
  return handle;
}

SG_EXPORT(sg_backward) int sg_backward(int32_t h) {
  return guarded([&] {
    const Var& v = handles().var(h, "backward");
    SyncCall call("backward of " + v.value().describe());
    v.backward();
  });
}

SG_EXPORT(sg_no_grad) int sg_no_grad(int32_t on) {
  return guarded([&] {
    if (on)
      handles().no_grad.emplace();
    else
      handles().no_grad.reset();
  });
}

SG_EXPORT(sg_release) void sg_release(int32_t h) {
  Handles& H = handles();
  H.vars.erase(h);
  H.modules.erase(h);
  H.optimizers.erase(h);
}

// An MLP of the given widths (activation 0 ReLU, 1 tanh, 2 GELU, 3 sigmoid), seeded.
SG_EXPORT(sg_mlp) int32_t sg_mlp(const int32_t* widths, int32_t count, int32_t activation, double seed) {
  int32_t handle = -1;
  guarded([&] {
    if (count < 2) throw Error(ErrorKind::Value, "nn.mlp: needs at least two widths (inputs and outputs)");
    if (activation < 0 || activation > 3) throw Error(ErrorKind::Value, "nn.mlp: unknown activation");
    std::vector<int64_t> w(widths, widths + count);
    for (int64_t x : w)
      if (x <= 0) throw Error(ErrorKind::Value, "nn.mlp: widths must be positive");
    Handles& H = handles();
    SyncCall call("nn.mlp");
    H.modules.emplace(H.next, nn::mlp(call.context(), w, nn::Activation(activation), uint64_t(seed)));
    handle = H.next++;
  });
  return handle;
}

SG_EXPORT(sg_module_forward) int32_t sg_module_forward(int32_t m, int32_t x) {
  int32_t handle = -1;
  guarded([&] {
    Handles& H = handles();
    const Var& input = H.var(x, "forward");
    SyncCall call("forward of " + input.value().describe());
    handle = H.add(H.module(m, "forward").forward(input));
  });
  return handle;
}

// The module's parameters as new tensor handles: sg_result_json() = [{name, handle}, ...].
SG_EXPORT(sg_module_parameters) int sg_module_parameters(int32_t m) {
  return guarded([&] {
    Handles& H = handles();
    nlohmann::json list = nlohmann::json::array();
    for (auto& [name, p] : H.module(m, "parameters").named_parameters())
      list.push_back({{"name", name}, {"handle", H.add(p)}});
    session().result_json = list.dump();
  });
}

// An optimizer over a module's parameters: kind "sgd" or "adam", options {lr, momentum,
// weightDecay, beta1, beta2, eps}.
SG_EXPORT(sg_optimizer) int32_t sg_optimizer(const char* kind, int32_t m, const char* options_json) {
  int32_t handle = -1;
  guarded([&] {
    Handles& H = handles();
    nlohmann::json o = nlohmann::json::parse(options_json ? options_json : "{}", nullptr, false);
    if (o.is_discarded() || !o.is_object()) throw Error(ErrorKind::Value, "optimizer: bad options");
    std::vector<Var> params = H.module(m, "optimizer").parameters();
    std::string k = kind;
    SyncCall call("optim." + k);
    double lr = number_arg(o, "lr", k, k == "adam" ? 1e-3 : 1e-2);
    std::unique_ptr<optim::Optimizer> opt;
    if (k == "sgd")
      opt = std::make_unique<optim::SGD>(params, lr, number_arg(o, "momentum", k, 0.0),
                                         number_arg(o, "weightDecay", k, 0.0));
    else if (k == "adam")
      opt = std::make_unique<optim::Adam>(params, lr, number_arg(o, "beta1", k, 0.9), number_arg(o, "beta2", k, 0.999),
                                          number_arg(o, "eps", k, 1e-8), number_arg(o, "weightDecay", k, 0.0));
    else
      throw Error(ErrorKind::Value, "optimizer: kind is 'sgd' or 'adam', not '" + k + "'");
    H.optimizers.emplace(H.next, std::move(opt));
    handle = H.next++;
  });
  return handle;
}

SG_EXPORT(sg_optimizer_step) int sg_optimizer_step(int32_t o) {
  return guarded([&] {
    optim::Optimizer& opt = handles().optimizer(o, "step");
    SyncCall call("step");
    opt.step();
  });
}

SG_EXPORT(sg_optimizer_zero_grad) int sg_optimizer_zero_grad(int32_t o) {
  return guarded([&] {
    optim::Optimizer& opt = handles().optimizer(o, "zero_grad");
    SyncCall call("zeroGrad");
    opt.zero_grad();
  });
}

SG_EXPORT(sg_optimizer_set_lr) int sg_optimizer_set_lr(int32_t o, double lr) {
  return guarded([&] { handles().optimizer(o, "set_lr").set_lr(lr); });
}
