// Optimizers and learning-rate schedules. The update is one kernel per parameter (Adam: several
// parameters a kernel).
#include "surfgrad/optim.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/launch.hpp"
#include "tensor/lazy.hpp"

namespace surfgrad::optim {

namespace {

void check_param(const Var& p, size_t i) {
  if (!p.defined()) throw Error(ErrorKind::Value, "optimizer: parameter " + std::to_string(i) + " is an empty Var");
  if (!p.requires_grad() || !p.is_leaf())
    throw Error(ErrorKind::Value, "optimizer: parameter " + std::to_string(i) + " (" + p.value().describe() +
                                      ") does not require a gradient; create it with Var::param");
  const Tensor& t = p.value();
  if (t.dtype() != DType::f32)
    throw Error(ErrorKind::DType, "optimizer: parameter " + std::to_string(i) + " is " + t.describe() +
                                      "; optimizers update f32 parameters");
  if (!t.is_contiguous() || t.offset() != 0)
    throw Error(ErrorKind::Value,
                "optimizer: parameter " + std::to_string(i) + " is a view; parameters must own contiguous storage");
}

}  // namespace

Optimizer::Optimizer(std::vector<Var> params, double lr) : params_(std::move(params)), lr_(lr) {
  if (!(lr >= 0)) throw Error(ErrorKind::Value, "optimizer: learning rate must be ≥ 0, got " + std::to_string(lr));
  for (size_t i = 0; i < params_.size(); ++i) check_param(params_[i], i);
}

void Optimizer::for_each_gradient(const std::function<void(size_t, const Tensor&, const Tensor&)>& update) {
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor g = params_[i].grad();
    if (g.defined()) update(i, params_[i].value(), g.contiguous());
  }
}

void Optimizer::zero_grad() {
  for (auto& p : params_) p.zero_grad();
}

SGD::SGD(std::vector<Var> params, double lr, double momentum, double weight_decay, bool nesterov)
    : Optimizer(std::move(params), lr), momentum_(momentum), weight_decay_(weight_decay), nesterov_(nesterov) {
  // Without momentum the kernel never reads its momentum buffer, but WebGPU binds every binding
  // (and refuses the parameter bound twice writable): one unused element stands in.
  for (auto& p : params_) buffers_.push_back(Tensor::zeros(p.context(), momentum_ != 0 ? p.shape() : Shape{1}));
}

void SGD::step() {
  for_each_gradient([&](size_t i, const Tensor& p, const Tensor& g) {
    auto ctx = p.context();
    kernels::Program::file(ctx, "optim_sgd.wgsl")
        .launch({p, g, buffers_[i]}, {p.numel(), lr_, momentum_, weight_decay_, nesterov_},
                kernels::groups_for(*ctx, uint64_t(p.numel()), 256));
  });
}

Adam::Adam(std::vector<Var> params, double lr, double beta1, double beta2, double eps, double weight_decay,
           bool decoupled)
    : Optimizer(std::move(params), lr),
      beta1_(beta1),
      beta2_(beta2),
      eps_(eps),
      weight_decay_(weight_decay),
      decoupled_(decoupled) {
  if (!(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1))
    throw Error(ErrorKind::Value, "Adam: betas must be in [0, 1)");
  // m and v of every parameter in one state buffer (m then v for each), so that one dispatch
  // updates several parameters (optim_adam_group.wgsl); parameters on several contexts keep
  // tensors of their own.
  bool one_context = true;
  int64_t total = 0;
  for (auto& p : params_) {
    one_context = one_context && p.context() == params_[0].context();
    total += 2 * p.value().numel();
  }
  if (one_context && !params_.empty()) {
    state_ = Tensor::zeros(params_[0].context(), {std::max<int64_t>(total, 1)});
    int64_t at = 0;
    for (auto& p : params_) {
      int64_t n = p.value().numel();
      m_.push_back(state_.slice(0, at, at + n).reshape(p.shape()));
      v_.push_back(state_.slice(0, at + n, at + 2 * n).reshape(p.shape()));
      at += 2 * n;
    }
    return;
  }
  for (auto& p : params_) {
    m_.push_back(Tensor::zeros(p.context(), p.shape()));
    v_.push_back(Tensor::zeros(p.context(), p.shape()));
  }
}

namespace {

// Parameters an Adam dispatch updates at most: 2k + 1 storage bindings within the adapter's
// limit and the launch seam's 8 (WebGPU's default): 3.
size_t adam_group_limit(const gpu::Context& ctx) {
  uint32_t bindings = std::min<uint32_t>(ctx.limits().max_storage_buffers_per_shader_stage, 8);
  return std::max<size_t>((std::max<uint32_t>(bindings, 3) - 1) / 2, 1);
}

// optim_adam_group.wgsl for a group of parameters: their bindings and branches. slices[j] > 0:
// parameter j's gradient is a pending split-K sum (lazy.hpp's PendingSlices) whose partials are
// bound in its place; grad<j>_sum(e) sums its S slices in sum_slices.wgsl's order (the bits
// realising it would store) from the partials' offset, a word after the per-parameter ones (in
// the order of such parameters). Cached by the group's size and its slice counts.
kernels::Program adam_group_program(const gpu::ContextPtr& ctx, const std::vector<int64_t>& slices) {
  const size_t k = slices.size();
  std::string key = "optim_adam_group.wgsl|" + std::to_string(k);
  for (int64_t s : slices)
    if (s) {
      for (size_t j = 0; j < k; ++j) key += (j ? "," : "|slices ") + std::to_string(slices[j]);
      break;
    }
  return kernels::Program::generated(ctx, key, [slices, k] {
    std::string bindings, functions, body;
    size_t sliced = 0;
    for (size_t j = 0; j < k; ++j) {
      std::string J = std::to_string(j), w = std::to_string(9 + 3 * j);
      bindings += "@group(0) @binding(" + std::to_string(1 + 2 * j) + ") var<storage, read_write> param" + J +
                  ": array<f32>;\n@group(0) @binding(" + std::to_string(2 + 2 * j) + ") var<storage, read> grad" + J +
                  ": array<f32>;\n";
      std::string g = "grad" + J + "[e]";
      if (slices[j]) {
        std::string at = "arg(" + std::to_string(9 + 3 * k + sliced++) + "u)";
        functions += "fn grad" + J + "_sum(e: u32) -> f32 {\n  let n = arg(" + w + "u + 1u);\n  var total = 0.0;\n" +
                     "  for (var s = 0u; s < " + std::to_string(slices[j]) + "u; s++) { total += grad" + J + "[" + at +
                     " + s * n + e]; }\n  return total;\n}\n";
        g = "grad" + J + "_sum(e)";
      }
      body += std::string(j ? "  else " : "  ") + "if (i < arg(" + w + "u) + arg(" + w + "u + 1u)) {\n" +
              "    let e = i - arg(" + w + "u);\n    let m = arg(" + w + "u + 2u) + e;\n    let v = m + arg(" + w +
              "u + 1u);\n    let r = adam_step(param" + J + "[e], " + g + ", state[m], state[v]);\n    param" + J +
              "[e] = r.x;\n    state[m] = r.y;\n    state[v] = r.z;\n  }\n";
    }
    return kernels::fill_template(kernels::wgsl_source("optim_adam_group.wgsl"),
                                  {{"BINDINGS", bindings + functions}, {"BODY", body}});
  });
}

}  // namespace

void Adam::step() {
  ++t_;
  float c1 = float(1.0 / (1.0 - std::pow(beta1_, double(t_)))), c2 = float(1.0 / (1.0 - std::pow(beta2_, double(t_))));
  struct Update {
    size_t i;
    Tensor p, g;
    PendingSlices parts;  // g's split-K partials, read in place (lazy mode; one context)
  };
  std::vector<Update> updates;
  for_each_gradient([&](size_t i, const Tensor& p, const Tensor& g) {
    updates.push_back({i, kernels::dense(p), kernels::dense(g), {}});
  });
  if (!state_.defined()) {
    // Parameters on several contexts: each alone, its m and v tensors of its own.
    for (const Update& u : updates) {
      auto ctx = u.p.context();
      kernels::Program::file(ctx, "optim_adam.wgsl")
          .launch({u.p, u.g, m_[u.i], v_[u.i]},
                  {u.p.numel(), lr_, beta1_, beta2_, eps_, weight_decay_, c1, c2, decoupled_},
                  kernels::groups_for(*ctx, uint64_t(u.p.numel()), 256));
    }
    return;
  }
  // Up to adam_group_limit parameters a dispatch, in order; a parameter sharing storage with one
  // already in the group (WebGPU binds a buffer writable once) starts the next group.
  auto ctx = state_.context();
  const size_t limit = adam_group_limit(*ctx);
  for (Update& u : updates) u.parts = lazy_pending_slices(u.g);
  for (size_t first = 0; first < updates.size();) {
    size_t last = first + 1;
    while (last < updates.size() && last - first < limit) {
      bool shared = false;
      for (size_t j = first; j < last; ++j) shared = shared || updates[last].p.shares_storage(updates[j].p);
      if (shared) break;
      ++last;
    }
    std::vector<kernels::Arg> args = {kernels::view(state_)};
    std::vector<uint32_t> words;
    for (kernels::Param w : {kernels::Param(int64_t(0)), kernels::Param(lr_), kernels::Param(beta1_),
                             kernels::Param(beta2_), kernels::Param(eps_), kernels::Param(weight_decay_),
                             kernels::Param(c1), kernels::Param(c2), kernels::Param(decoupled_)})
      words.push_back(w.word);
    int64_t total = 0;
    std::vector<int64_t> slices;
    std::vector<uint32_t> slice_offsets;
    for (size_t j = first; j < last; ++j) {
      const Update& u = updates[j];
      args.push_back(kernels::Arg(u.p));
      args.push_back(u.parts.slices ? kernels::view(u.parts.first) : kernels::Arg(u.g));
      slices.push_back(u.parts.slices);
      if (u.parts.slices) slice_offsets.push_back(kernels::Param(u.parts.first.offset()).word);
      words.push_back(kernels::Param(total).word);
      words.push_back(kernels::Param(u.p.numel()).word);
      words.push_back(kernels::Param(m_[u.i].offset()).word);  // v follows m in the state buffer
      total += u.p.numel();
    }
    words[0] = kernels::Param(total).word;
    words.insert(words.end(), slice_offsets.begin(), slice_offsets.end());
    adam_group_program(ctx, slices)
        .launch(std::span<const kernels::Arg>(args), words, kernels::groups_for(*ctx, uint64_t(total), 256));
    first = last;
  }
}

StepLR::StepLR(Optimizer& opt, int64_t step_size, double gamma)
    : opt_(opt), base_(opt.lr()), step_size_(step_size), gamma_(gamma) {
  if (step_size <= 0) throw Error(ErrorKind::Value, "StepLR: step_size must be positive");
}

void StepLR::step() { opt_.set_lr(base_ * std::pow(gamma_, double(++count_ / step_size_))); }

CosineLR::CosineLR(Optimizer& opt, int64_t total_steps, double min_lr)
    : opt_(opt), base_(opt.lr()), min_(min_lr), total_(total_steps) {
  if (total_steps <= 0) throw Error(ErrorKind::Value, "CosineLR: total_steps must be positive");
}

void CosineLR::step() {
  double progress = std::min(1.0, double(++count_) / double(total_));
  opt_.set_lr(min_ + 0.5 * (base_ - min_) * (1 + std::cos(3.141592653589793 * progress)));
}

}  // namespace surfgrad::optim
