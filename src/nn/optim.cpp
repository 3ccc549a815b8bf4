// Optimizers and learning-rate schedules. The update is one kernel per parameter (Adam: per pair).
#include "surfgrad/optim.hpp"

#include <cmath>

#include "kernels/launch.hpp"

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
  for (auto& p : params_) {
    m_.push_back(Tensor::zeros(p.context(), p.shape()));
    v_.push_back(Tensor::zeros(p.context(), p.shape()));
  }
}

void Adam::step() {
  ++t_;
  float c1 = float(1.0 / (1.0 - std::pow(beta1_, double(t_)))), c2 = float(1.0 / (1.0 - std::pow(beta2_, double(t_))));
  // Parameters two by two in one dispatch (optim_adam_pair.wgsl: eight storage bindings); the
  // odd one out, or a pair sharing storage (WebGPU binds a buffer writable once), alone.
  struct Update {
    size_t i;
    Tensor p, g;
  };
  std::vector<Update> updates;
  for_each_gradient([&](size_t i, const Tensor& p, const Tensor& g) { updates.push_back({i, p, g}); });
  for (size_t k = 0; k < updates.size();) {
    const Update& a = updates[k];
    auto ctx = a.p.context();
    if (k + 1 < updates.size() && !updates[k + 1].p.shares_storage(a.p)) {
      const Update& b = updates[k + 1];
      kernels::Program::file(ctx, "optim_adam_pair.wgsl")
          .launch({a.p, a.g, m_[a.i], v_[a.i], b.p, b.g, m_[b.i], v_[b.i]},
                  {a.p.numel(), lr_, beta1_, beta2_, eps_, weight_decay_, c1, c2, decoupled_, b.p.numel()},
                  kernels::groups_for(*ctx, uint64_t(a.p.numel() + b.p.numel()), 256));
      k += 2;
      continue;
    }
    kernels::Program::file(ctx, "optim_adam.wgsl")
        .launch({a.p, a.g, m_[a.i], v_[a.i]},
                {a.p.numel(), lr_, beta1_, beta2_, eps_, weight_decay_, c1, c2, decoupled_},
                kernels::groups_for(*ctx, uint64_t(a.p.numel()), 256));
    ++k;
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
