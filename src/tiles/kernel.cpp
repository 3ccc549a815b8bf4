// Launching tile kernels through the one seam (kernels::Program, generated source), after
// checking on the host everything the launch needs; and the tile kernel as one autograd op.
#include <algorithm>

#include "autograd/var_access.hpp"
#include "kernels/launch.hpp"
#include "kernels/subgroup_matrix_emulation.hpp"
#include "surfgrad/error.hpp"
#include "tiles/emit.hpp"
#include "tiles/graph.hpp"
#include "tiles/matmul_sgmat.hpp"
#include "tiles/memory.hpp"

namespace surfgrad::tiles {

using detail::Graph;

namespace {

// The gpu layer binds at most 8 storage buffers per dispatch (also WebGPU's default limit, which
// browsers grant).
constexpr uint32_t kMaxBindings = 8;

std::string kernel_label(const Graph& g, bool backward) {
  return "tile kernel '" + g.name + "'" + (backward ? " (backward)" : "");
}

// The tensors' extents as the kernels read them: batch, rows, cols per array.
kernels::Params shape_params(const Graph& g, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  kernels::Params p;
  size_t in = 0, out = 0;
  for (const auto& a : g.arrays) {
    const Tensor& t = a.output ? outputs[out++] : inputs[in++];
    p.add(t.rank() == 3 ? t.shape(0) : int64_t(1));
    p.add(t.shape(t.rank() - 2));
    p.add(t.shape(t.rank() - 1));
  }
  return p;
}

// `gradients`: the tensors are gradients (f32 whatever their array's dtype).
void check_tensors(const Graph& g, bool backward, const std::vector<Tensor>& tensors, const std::vector<int>& arrays,
                   const char* role, bool gradients = false) {
  std::string label = kernel_label(g, backward);
  if (tensors.size() != arrays.size())
    throw Error(ErrorKind::Value, label + ": " + std::to_string(arrays.size()) + " " + role + " declared, " +
                                      std::to_string(tensors.size()) + " tensors given");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    const std::string& name = g.arrays[size_t(arrays[i])].name;
    if (!t.defined()) throw Error(ErrorKind::Value, label + ": array '" + name + "' got an empty tensor");
    DType want = gradients ? DType::f32 : g.arrays[size_t(arrays[i])].dtype;
    if (t.dtype() != want)
      throw Error(ErrorKind::DType, label + ": array '" + name + "'" + (gradients ? "'s gradient" : "") + " must be " +
                                        dtype_name(want) + ", got " + t.describe() +
                                        (want == DType::f32 ? "" : " (declared so by Kernel::input)"));
    if (t.rank() != 2 && t.rank() != 3)
      throw Error(ErrorKind::Shape,
                  label + ": array '" + name + "' must be [rows, cols] or [batch, rows, cols], got " + t.describe());
    if (t.numel() == 0) throw Error(ErrorKind::Shape, label + ": array '" + name + "' is empty (" + t.describe() + ")");
    if (uint64_t(t.numel()) > 0xffffffffull)
      throw Error(ErrorKind::LimitExceeded,
                  label + ": array '" + name + "' (" + t.describe() + ") has more than 2^32 − 1 elements");
  }
}

std::vector<Tensor> dense_all(const std::vector<Tensor>& ts) {
  std::vector<Tensor> r;
  for (const Tensor& t : ts) r.push_back(kernels::dense(t));
  return r;
}

}  // namespace

namespace {

// How a launch generates its products: on subgroup matrices of subgroup size `sg` (0: the scalar
// code), their builtins emulated in plain WGSL or not (SURFGRAD_TILE_SGMAT=emulate).
struct Products {
  int sg = 0;
  bool emulate = false;
  int variant() const { return sg ? (emulate ? 2 : 1) : 0; }
};

// f16 inputs and f16 subgroup-matrix operands need the enable line (and an adapter with
// shader-f16: the seam says so otherwise); subgroup matrices, the subgroup builtins.
kernels::CompileOptions compile_options(const Graph& g, Products p) {
  kernels::CompileOptions o;
  o.f16 = p.sg || std::any_of(g.arrays.begin(), g.arrays.end(), [](const auto& a) { return a.dtype == DType::f16; });
  o.subgroups = p.sg > 0;
  return o;
}

// kind: 0 the forward kernel, 1 the backward, 2 the backward writing the forward's outputs too.
const std::string& generated_wgsl(Graph& g, int kind, bool float_atomics, bool staged, Products p = {}) {
  Graph::Generated& made = g.generated[kind][float_atomics][staged][p.variant()];
  if (made.text.empty() || made.nodes != g.nodes.size() || made.arrays != g.arrays.size()) {
    made.text = kind ? detail::backward_wgsl(g, float_atomics, staged, kind == 2, p.sg)
                     : detail::forward_wgsl(g, float_atomics, staged, p.sg);
    if (p.emulate) made.text = kernels::emulate_subgroup_matrix(made.text);
    made.nodes = g.nodes.size();
    made.arrays = g.arrays.size();
  }
  return made.text;
}

// Weights staged in f32 and products on subgroup matrices, as a launch on `ctx` runs them: the
// staging where it fits beside the tiles (stages_weights), subgroup matrices where their scratch
// fits beside both, else beside the tiles alone (then the weights stay in global memory: the
// products that read them most are the ones on subgroup matrices, which stage them in f16).
struct Plan {
  bool staged;
  Products products;
};
Plan launch_plan(const gpu::Context& ctx, const Kernel& k, const Graph& g, bool backward) {
  Plan p{k.stages_weights(ctx, backward), {}};
  uint64_t tiles = k.workgroup_bytes(backward);
  p.products.sg = detail::sgmat_subgroup_size(ctx, g, backward, tiles + (p.staged ? k.weight_stage_bytes() : 0));
  if (!p.products.sg && p.staged && detail::sgmat_subgroup_size(ctx, g, backward, tiles)) {
    p.staged = false;
    p.products.sg = detail::sgmat_subgroup_size(ctx, g, backward, tiles);
  }
  p.products.emulate = p.products.sg && detail::sgmat_mode() == detail::SgmatMode::emulate;
  return p;
}

}  // namespace

std::string Kernel::forward_wgsl(bool float_atomics, bool stage_weights) const {
  return generated_wgsl(*graph_, 0, float_atomics, stage_weights && weight_stage_bytes() > 0);
}
std::string Kernel::backward_wgsl(bool float_atomics, bool stage_weights) const {
  return generated_wgsl(*graph_, 1, float_atomics, stage_weights && weight_stage_bytes() > 0);
}
std::string Kernel::forward_backward_wgsl(bool float_atomics, bool stage_weights) const {
  return generated_wgsl(*graph_, 2, float_atomics, stage_weights && weight_stage_bytes() > 0);
}

std::string Kernel::subgroup_matrix_wgsl(int kind, int subgroup_size, bool float_atomics, bool stage_weights) const {
  if (kind < 0 || kind > 2)
    throw Error(ErrorKind::Value, kernel_label(*graph_, kind != 0) + ": subgroup_matrix_wgsl kind " +
                                      std::to_string(kind) + "; use 0 (forward), 1 (backward) or 2 (both)");
  if (subgroup_size <= 0 || graph_->threads % subgroup_size != 0)
    throw Error(ErrorKind::Value, kernel_label(*graph_, kind != 0) + ": subgroup size " +
                                      std::to_string(subgroup_size) + " must divide the workgroup's " +
                                      std::to_string(graph_->threads) + " threads");
  return generated_wgsl(*graph_, kind, float_atomics, stage_weights && weight_stage_bytes() > 0, {subgroup_size});
}

uint64_t Kernel::subgroup_matrix_bytes(bool backward, int subgroup_size) const {
  return detail::sgmat_workgroup_bytes(*graph_, subgroup_size, backward);
}

bool Kernel::uses_subgroup_matrices(const gpu::Context& ctx, bool backward) const {
  return launch_plan(ctx, *this, *graph_, backward).products.sg > 0;
}

uint64_t Kernel::workgroup_bytes(bool backward) const { return detail::plan_memory(*graph_, backward).bytes(); }
uint64_t Kernel::weight_stage_bytes() const { return 4 * uint64_t(detail::weight_stage_elements(*graph_)); }

void Kernel::set_weight_staging(bool on) { graph_->weight_staging = on; }

bool Kernel::stages_weights(const gpu::Context& ctx, bool backward) const {
  uint64_t extra = weight_stage_bytes();
  return graph_->weight_staging && extra > 0 &&
         workgroup_bytes(backward) + extra <= ctx.limits().max_compute_workgroup_storage_size;
}

void Kernel::check_limits(const gpu::Context& ctx, Grid grid, bool backward, bool with_values) const {
  const Graph& g = *graph_;
  std::string label = kernel_label(g, backward);
  bool writes = std::any_of(g.nodes.begin(), g.nodes.end(), [](const auto& n) { return !n.makes_tile(); });
  if (!writes) throw Error(ErrorKind::Value, label + " writes nothing (no tile_store or tile_atomic_add)");
  if (ctx.unchecked_device())
    throw Error(ErrorKind::Unsupported,
                label +
                    ": this context runs only surfgrad's own kernels, without bounds checks "
                    "(ContextOptions::own_kernels_only under Dawn); run tile programs on a context created "
                    "without it");
  for (const auto& a : g.arrays)
    if (a.dtype == DType::f16 && !ctx.features().shader_f16)
      throw Error(ErrorKind::Unsupported, label + ": input '" + a.name + "' is f16 and this adapter (" +
                                              ctx.info().name + ") has no shader-f16; declare it f32");
  const gpu::Limits& L = ctx.limits();
  uint64_t bytes = workgroup_bytes(backward);
  if (bytes > L.max_compute_workgroup_storage_size) {
    int largest = -1;
    uint64_t largest_bytes = 0;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const auto& node = g.nodes[n];
      uint64_t b = node.makes_tile() ? uint64_t(node.shape.rows) * uint64_t(node.shape.cols) * 4 : 0;
      if (b > largest_bytes) largest = int(n), largest_bytes = b;
    }
    throw Error(ErrorKind::LimitExceeded,
                label + ": its tiles need " + std::to_string(bytes) + " bytes of workgroup memory" +
                    (backward ? " (values and adjoints)" : "") + ", over this adapter's limit of " +
                    std::to_string(L.max_compute_workgroup_storage_size) +
                    " bytes (maxComputeWorkgroupStorageSize); the largest tile is " + detail::tile_name(g, largest) +
                    " (" + detail::shape_text(g.nodes[size_t(largest)].shape) + " f32, " +
                    std::to_string(largest_bytes) + " bytes): use smaller tiles");
  }
  if (uint32_t(g.threads) > L.max_compute_invocations_per_workgroup ||
      uint32_t(g.threads) > L.max_compute_workgroup_size_x)
    throw Error(ErrorKind::LimitExceeded,
                label + ": " + std::to_string(g.threads) + " threads per workgroup, over this adapter's limit of " +
                    std::to_string(std::min(L.max_compute_invocations_per_workgroup, L.max_compute_workgroup_size_x)));
  size_t bindings = backward ? g.arrays.size() + g.differentiable_inputs().size() : g.arrays.size();
  if (with_values) bindings += g.outputs().size();
  uint32_t most = std::min<uint32_t>(kMaxBindings, L.max_storage_buffers_per_shader_stage);
  if (bindings > most)
    throw Error(ErrorKind::LimitExceeded,
                label + ": " + std::to_string(bindings) + " tensors bound, over the limit of " + std::to_string(most) +
                    " storage buffers per kernel (a backward kernel binds each input, each output's gradient and "
                    "each differentiable input's gradient" +
                    (with_values ? std::string(", and here each output too") : std::string()) +
                    "; declare data inputs with differentiable = false)");
  for (uint32_t extent : {grid.x, grid.y, grid.z})
    if (extent < 1 || extent > L.max_compute_workgroups_per_dimension)
      throw Error(ErrorKind::LimitExceeded, label + ": grid " + std::to_string(grid.x) + "×" + std::to_string(grid.y) +
                                                "×" + std::to_string(grid.z) + " blocks; each axis must be 1 … " +
                                                std::to_string(L.max_compute_workgroups_per_dimension));
}

void Kernel::validate(const gpu::Context& ctx, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                      Grid grid, bool backward) const {
  const Graph& g = *graph_;
  std::string label = kernel_label(g, backward);
  check_limits(ctx, grid, backward);
  check_tensors(g, backward, inputs, g.inputs(), "inputs");
  std::vector<int> ins = g.inputs();
  for (const auto& n : g.nodes) {
    if (n.op != detail::Op::matmul || n.array < 0) continue;
    size_t slot = size_t(std::find(ins.begin(), ins.end(), n.array) - ins.begin());
    int64_t rows = n.at.row.offset + g.nodes[size_t(n.args[0])].shape.cols, cols = n.shape.cols;
    const Tensor& b = inputs[slot];
    if (b.rank() != 2 || b.shape(0) < rows || b.shape(1) < cols)
      throw Error(ErrorKind::Shape, label + ", tile_matmul: B is rows " + std::to_string(n.at.row.offset) + " … " +
                                        std::to_string(rows - 1) + " and columns 0 … " + std::to_string(cols - 1) +
                                        " of '" + g.arrays[size_t(n.array)].name + "' (to multiply a " +
                                        detail::shape_text(g.nodes[size_t(n.args[0])].shape) +
                                        " tile), which must be rank 2 with at least " + shape_str({rows, cols}) +
                                        "; got " + b.describe());
  }
  check_tensors(g, backward, outputs, g.outputs(), backward ? "output gradients" : "outputs", /*gradients=*/backward);
}

void Kernel::launch(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs, Grid grid) const {
  if (inputs.empty() && outputs.empty()) throw Error(ErrorKind::Value, kernel_label(*graph_, false) + ": no tensors");
  const gpu::ContextPtr& ctx = (inputs.empty() ? outputs : inputs)[0].context();
  validate(*ctx, inputs, outputs, grid, false);
  std::vector<Tensor> in = dense_all(inputs);
  const Plan plan = launch_plan(*ctx, *this, *graph_, false);
  const std::string& source = generated_wgsl(*graph_, 0, ctx->features().float32_atomics, plan.staged, plan.products);
  // The source is the key: two kernels of one name but different programs never share a pipeline.
  auto program = kernels::Program::generated(
      ctx, "tiles|" + source, [&] { return source; }, compile_options(*graph_, plan.products));
  std::vector<kernels::Arg> args;
  size_t i = 0, o = 0;
  for (const auto& a : graph_->arrays) {
    if (!a.output)
      args.emplace_back(in[i++]);
    else
      args.push_back(a.atomic ? kernels::bits(outputs[o++]) : kernels::Arg(outputs[o++]));
  }
  program.launch(std::span<const kernels::Arg>(args), shape_params(*graph_, in, outputs), {grid.x, grid.y, grid.z});
}

void Kernel::launch_backward(const std::vector<Tensor>& inputs, const std::vector<Tensor>& output_grads,
                             const std::vector<Tensor>& input_grads, Grid grid) const {
  launch_gradients(inputs, output_grads, input_grads, nullptr, grid);
}

void Kernel::launch_forward_backward(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                                     const std::vector<Tensor>& output_grads, const std::vector<Tensor>& input_grads,
                                     Grid grid) const {
  launch_gradients(inputs, output_grads, input_grads, &outputs, grid);
}

void Kernel::launch_gradients(const std::vector<Tensor>& inputs, const std::vector<Tensor>& output_grads,
                              const std::vector<Tensor>& input_grads, const std::vector<Tensor>* outputs,
                              Grid grid) const {
  if (inputs.empty()) throw Error(ErrorKind::Value, kernel_label(*graph_, true) + ": no inputs to differentiate");
  const gpu::ContextPtr& ctx = inputs[0].context();
  validate(*ctx, inputs, output_grads, grid, true);
  if (outputs) {
    check_limits(*ctx, grid, true, true);
    check_tensors(*graph_, false, *outputs, graph_->outputs(), "outputs");
  }
  std::vector<int> ins = graph_->inputs(), diff = graph_->differentiable_inputs();
  check_tensors(*graph_, true, input_grads, diff, "input gradients", /*gradients=*/true);
  for (size_t i = 0, d = 0; i < ins.size(); ++i) {
    if (!graph_->arrays[size_t(ins[i])].differentiable) continue;
    if (input_grads[d].shape() != inputs[i].shape())
      throw Error(ErrorKind::Shape, kernel_label(*graph_, true) + ": the gradient of '" +
                                        graph_->arrays[size_t(ins[i])].name + "' is " + input_grads[d].describe() +
                                        ", its input " + inputs[i].describe());
    ++d;
  }
  std::vector<Tensor> in = dense_all(inputs), dout = dense_all(output_grads);
  const Plan plan = launch_plan(*ctx, *this, *graph_, true);
  const std::string& source =
      generated_wgsl(*graph_, outputs ? 2 : 1, ctx->features().float32_atomics, plan.staged, plan.products);
  auto program = kernels::Program::generated(
      ctx, "tiles|" + source, [&] { return source; }, compile_options(*graph_, plan.products));
  std::vector<kernels::Arg> args;
  for (const Tensor& t : in) args.emplace_back(t);
  for (const Tensor& t : dout) args.emplace_back(t);
  for (const Tensor& t : input_grads) args.push_back(kernels::bits(t));
  if (outputs) {
    size_t o = 0;
    for (int a : graph_->outputs())
      args.push_back(graph_->arrays[size_t(a)].atomic ? kernels::bits((*outputs)[o++]) : kernels::Arg((*outputs)[o++]));
  }
  // The shapes of the output gradients are the outputs' (validate checked them as outputs).
  program.launch(std::span<const kernels::Arg>(args), shape_params(*graph_, in, dout), {grid.x, grid.y, grid.z});
}

Var Kernel::operator()(const std::vector<Var>& inputs, const Shape& output_shape, Grid grid) const {
  std::string label = kernel_label(*graph_, false);
  if (graph_->outputs().size() != 1)
    throw Error(ErrorKind::Value, label + " has " + std::to_string(graph_->outputs().size()) +
                                      " outputs; as an autograd op it must have exactly one");
  if (inputs.empty()) throw Error(ErrorKind::Value, label + ": an autograd op needs at least one input");
  std::vector<Tensor> xs;
  for (const Var& v : inputs) xs.push_back(kernels::dense(v.value()));
  const gpu::ContextPtr& ctx = xs[0].context();
  bool wants_grad =
      grad_enabled() && std::any_of(inputs.begin(), inputs.end(), [](const Var& v) { return v.requires_grad(); });
  // The backward kernel's limits (twice the workgroup memory) are checked now, before any work.
  check_limits(*ctx, grid, false);
  if (wants_grad) check_limits(*ctx, grid, true);
  Tensor y = Tensor::zeros(ctx, output_shape, DType::f32);
  launch(xs, {y}, grid);
  Kernel self = *this;
  std::vector<bool> differentiable;
  for (int i : graph_->inputs()) differentiable.push_back(graph_->arrays[size_t(i)].differentiable);
  return VarAccess::make(y, "tile_kernel", inputs, [self, xs, grid, differentiable](const Tensor& g) {
    std::vector<Tensor> grads(xs.size()), computed;
    for (size_t i = 0; i < xs.size(); ++i)
      if (differentiable[i]) computed.push_back(grads[i] = Tensor::zeros(xs[i].context(), xs[i].shape(), DType::f32));
    self.launch_backward(xs, {g}, computed, grid);
    return grads;  // an undefined tensor for a constant input: no gradient
  });
}

}  // namespace surfgrad::tiles
