// Layers, losses and parameter files for training with surfgrad's autograd.
//
//   auto model = nn::mlp(ctx, {784, 256, 10}, nn::Activation::ReLU, /*seed=*/1);
//   Var logits = model->forward(Var(images));
//   Var loss = nn::cross_entropy(logits, labels);          // labels: i32 [N]
//   loss.backward();
//   nn::save_parameters(*model, "model.npz");               // np.load("model.npz") reads it
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "surfgrad/autograd.hpp"

namespace surfgrad::nn {

class Module {
 public:
  virtual ~Module() = default;
  virtual Var forward(const Var& x) = 0;
  // Every trainable parameter, with a stable dotted name ("0.weight", "2.bias", ...).
  virtual std::vector<std::pair<std::string, Var>> named_parameters() const { return {}; }
  std::vector<Var> parameters() const;
  void zero_grad() const;
  virtual void train(bool on = true) { training_ = on; }
  void eval() { train(false); }
  bool training() const { return training_; }

 protected:
  bool training_ = true;
};

// y = x·W + b with W of shape [in, out]. Initialised as PyTorch does: U(−1/√in, 1/√in).
class Linear : public Module {
 public:
  Linear(const gpu::ContextPtr& ctx, int64_t in, int64_t out, uint64_t seed, bool bias = true);
  Var forward(const Var& x) override;
  std::vector<std::pair<std::string, Var>> named_parameters() const override;
  Var weight, bias;
};

enum class Activation { ReLU, Tanh, GELU, Sigmoid };
class Act : public Module {
 public:
  explicit Act(Activation kind) : kind_(kind) {}
  Var forward(const Var& x) override;

 private:
  Activation kind_;
};

// Zeroes each element with probability p while training (scaling the rest by 1/(1−p)); the
// identity in eval mode. Masks come from the counter-based generator: seed, then a call count.
class Dropout : public Module {
 public:
  Dropout(double p, uint64_t seed);
  Var forward(const Var& x) override;

 private:
  double p_;
  uint64_t seed_, calls_ = 0;
};

// Normalises over the last axis, then scales and shifts (weight 1, bias 0 at start).
class LayerNorm : public Module {
 public:
  LayerNorm(const gpu::ContextPtr& ctx, int64_t dim, double eps = 1e-5);
  Var forward(const Var& x) override;
  std::vector<std::pair<std::string, Var>> named_parameters() const override;
  Var weight, bias;

 private:
  double eps_;
};

// Rows of a [num, dim] table, N(0, 1) at start. forward takes i32 indices as a Var's value.
class Embedding : public Module {
 public:
  Embedding(const gpu::ContextPtr& ctx, int64_t num, int64_t dim, uint64_t seed);
  Var forward(const Var& indices) override;
  std::vector<std::pair<std::string, Var>> named_parameters() const override;
  Var weight;
};

class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<Module>> layers) : layers_(std::move(layers)) {}
  void add(std::shared_ptr<Module> layer) { layers_.push_back(std::move(layer)); }
  Var forward(const Var& x) override;
  std::vector<std::pair<std::string, Var>> named_parameters() const override;
  void train(bool on = true) override;
  const std::vector<std::shared_ptr<Module>>& layers() const { return layers_; }

 private:
  std::vector<std::shared_ptr<Module>> layers_;
};

// Linear layers of the given widths with `act` between them (none after the last).
std::shared_ptr<Sequential> mlp(const gpu::ContextPtr& ctx, const std::vector<int64_t>& widths,
                                Activation act = Activation::ReLU, uint64_t seed = 0, double dropout = 0);

// ---- losses (means over the batch) ----
Var mse_loss(const Var& prediction, const Tensor& target);
// Softmax cross-entropy from logits [N, C] and integer labels [N] (i32, in [0, C)).
Var cross_entropy(const Var& logits, const Tensor& labels);
// Binary cross-entropy from logits, in the stable form max(x, 0) − x·t + log(1 + e^−|x|).
Var bce_with_logits(const Var& logits, const Tensor& targets);

// ---- parameter files: .npz, one array per named parameter ----
void save_parameters(const Module& module, const std::string& path);
// Every parameter must be in the file with its exact shape; anything else is an error that
// names the parameter.
void load_parameters(const Module& module, const std::string& path);

}  // namespace surfgrad::nn
