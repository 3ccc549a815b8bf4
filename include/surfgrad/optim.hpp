// Optimizers: each step of each parameter is one fused GPU kernel (optim_sgd.wgsl,
// optim_adam.wgsl) that reads the gradient and updates the parameter and its state in place.
//
//   optim::Adam opt(model->parameters(), /*lr=*/1e-3);
//   optim::CosineLR schedule(opt, /*total_steps=*/1000);
//   for (...) { loss = ...; opt.zero_grad(); loss.backward(); opt.step(); schedule.step(); }
#pragma once
#include <functional>
#include <vector>

#include "surfgrad/autograd.hpp"

namespace surfgrad::optim {

class Optimizer {
 public:
  Optimizer(std::vector<Var> params, double lr);
  virtual ~Optimizer() = default;
  virtual void step() = 0;  // parameters without a gradient this round are left as they are
  void zero_grad();
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  const std::vector<Var>& params() const { return params_; }

 protected:
  // Calls update(index, parameter, contiguous gradient) for each parameter that has a gradient.
  void for_each_gradient(const std::function<void(size_t, const Tensor&, const Tensor&)>& update);
  std::vector<Var> params_;
  double lr_;
};

// p ← p − lr·d, d = g + wd·p, or with momentum μ: b ← μ·b + d, d = b (Nesterov: d + μ·b).
class SGD : public Optimizer {
 public:
  SGD(std::vector<Var> params, double lr, double momentum = 0, double weight_decay = 0, bool nesterov = false);
  void step() override;

 private:
  double momentum_, weight_decay_;
  bool nesterov_;
  std::vector<Tensor> buffers_;
};

// Adam (Kingma & Ba) with bias correction; weight decay added to the gradient (L2), or, when
// decoupled (AdamW, Loshchilov & Hutter), applied to the parameter directly.
class Adam : public Optimizer {
 public:
  Adam(std::vector<Var> params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8,
       double weight_decay = 0, bool decoupled = false);
  void step() override;
  int64_t steps() const { return t_; }

 private:
  double beta1_, beta2_, eps_, weight_decay_;
  bool decoupled_;
  int64_t t_ = 0;
  std::vector<Tensor> m_, v_;  // views of state_ (m then v per parameter) where it is defined
  Tensor state_;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<Var> params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8,
        double weight_decay = 0.01)
      : Adam(std::move(params), lr, beta1, beta2, eps, weight_decay, true) {}
};

// Learning-rate schedules: call step() once per optimizer step (or epoch, as you count).
class StepLR {
 public:
  StepLR(Optimizer& opt, int64_t step_size, double gamma = 0.1);
  void step();

 private:
  Optimizer& opt_;
  double base_;
  int64_t step_size_, count_ = 0;
  double gamma_;
};

class CosineLR {  // base → min_lr over total_steps along a half cosine, then stays at min_lr
 public:
  CosineLR(Optimizer& opt, int64_t total_steps, double min_lr = 0);
  void step();

 private:
  Optimizer& opt_;
  double base_, min_;
  int64_t total_, count_ = 0;
};

}  // namespace surfgrad::optim
