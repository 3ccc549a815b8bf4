// Layers: Linear, activations, Dropout, LayerNorm, Embedding, Sequential and the MLP builder.
#include <cmath>

#include "nn/layer_norm_rows.hpp"
#include "surfgrad/nn.hpp"

namespace surfgrad::nn {

std::vector<Var> Module::parameters() const {
  std::vector<Var> out;
  for (auto& [name, v] : named_parameters()) out.push_back(v);
  return out;
}

void Module::zero_grad() const {
  for (auto& v : parameters()) v.zero_grad();
}

Linear::Linear(const gpu::ContextPtr& ctx, int64_t in, int64_t out, uint64_t seed, bool with_bias) {
  if (in <= 0 || out <= 0)
    throw Error(ErrorKind::Value,
                "Linear: sizes must be positive, got " + std::to_string(in) + " → " + std::to_string(out));
  double bound = 1.0 / std::sqrt(double(in));
  weight = Var::param(Tensor::uniform(ctx, {in, out}, seed * 2 + 1, -bound, bound));
  if (with_bias) bias = Var::param(Tensor::uniform(ctx, {out}, seed * 2 + 2, -bound, bound));
}

Var Linear::forward(const Var& x) {
  if (x.shape(-1) != weight.shape(0))
    throw Error(ErrorKind::Shape, "Linear: input " + x.value().describe() + " has " + std::to_string(x.shape(-1)) +
                                      " features, the layer expects " + std::to_string(weight.shape(0)));
  Var y = x.matmul(weight);
  return bias.defined() ? y + bias : y;
}

std::vector<std::pair<std::string, Var>> Linear::named_parameters() const {
  std::vector<std::pair<std::string, Var>> p = {{"weight", weight}};
  if (bias.defined()) p.emplace_back("bias", bias);
  return p;
}

Var Act::forward(const Var& x) {
  switch (kind_) {
    case Activation::ReLU: return x.relu();
    case Activation::Tanh: return x.tanh();
    case Activation::GELU: return x.gelu();
    case Activation::Sigmoid: return x.sigmoid();
  }
  return x;
}

Dropout::Dropout(double p, uint64_t seed) : p_(p), seed_(seed) {
  if (!(p >= 0 && p < 1)) throw Error(ErrorKind::Value, "Dropout: p must be in [0, 1), got " + std::to_string(p));
}

Var Dropout::forward(const Var& x) {
  if (!training_ || p_ == 0) return x;
  // A fresh mask per call: the generator is counter-based, so mix the call count into the seed.
  uint64_t seed = seed_ * 0x9E3779B97F4A7C15ull + (++calls_);
  Tensor keep = gt(Tensor::uniform(x.context(), x.shape(), seed, 0, 1, x.dtype()), scalar_like(x.value(), p_));
  return x * Var(keep.cast(x.dtype()) * (1.0 / (1.0 - p_)));
}

LayerNorm::LayerNorm(const gpu::ContextPtr& ctx, int64_t dim, double eps) : eps_(eps) {
  weight = Var::param(Tensor::ones(ctx, {dim}));
  bias = Var::param(Tensor::zeros(ctx, {dim}));
}

Var LayerNorm::forward(const Var& x) {
  if (x.shape(-1) != weight.shape(0))
    throw Error(ErrorKind::Shape,
                "LayerNorm: input " + x.value().describe() + " does not end in " + std::to_string(weight.shape(0)));
  if (layer_norm_rows_applies(x, weight, bias)) return layer_norm_rows(x, weight, bias, eps_);
  Var centered = x - x.mean({-1}, true);
  Var var = (centered * centered).mean({-1}, true);
  return centered * (var + eps_).rsqrt() * weight + bias;
}

std::vector<std::pair<std::string, Var>> LayerNorm::named_parameters() const {
  return {{"weight", weight}, {"bias", bias}};
}

Embedding::Embedding(const gpu::ContextPtr& ctx, int64_t num, int64_t dim, uint64_t seed) {
  weight = Var::param(Tensor::normal(ctx, {num, dim}, seed));
}

Var Embedding::forward(const Var& indices) {
  const Tensor& idx = indices.value();
  if (idx.dtype() != DType::i32) throw Error(ErrorKind::DType, "Embedding: indices must be i32, got " + idx.describe());
  Shape out = idx.shape();
  out.push_back(weight.shape(1));
  return index_select(weight, 0, idx.reshape({-1})).reshape(out);
}

std::vector<std::pair<std::string, Var>> Embedding::named_parameters() const { return {{"weight", weight}}; }

Var Sequential::forward(const Var& x) {
  Var y = x;
  for (auto& layer : layers_) y = layer->forward(y);
  return y;
}

std::vector<std::pair<std::string, Var>> Sequential::named_parameters() const {
  std::vector<std::pair<std::string, Var>> out;
  for (size_t i = 0; i < layers_.size(); ++i)
    for (auto& [name, v] : layers_[i]->named_parameters()) out.emplace_back(std::to_string(i) + "." + name, v);
  return out;
}

void Sequential::train(bool on) {
  Module::train(on);
  for (auto& layer : layers_) layer->train(on);
}

std::shared_ptr<Sequential> mlp(const gpu::ContextPtr& ctx, const std::vector<int64_t>& widths, Activation act,
                                uint64_t seed, double dropout) {
  if (widths.size() < 2) throw Error(ErrorKind::Value, "mlp: give at least an input and an output width");
  auto model = std::make_shared<Sequential>();
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    model->add(std::make_shared<Linear>(ctx, widths[i], widths[i + 1], seed * 1000 + i));
    if (i + 2 < widths.size()) {
      model->add(std::make_shared<Act>(act));
      if (dropout > 0) model->add(std::make_shared<Dropout>(dropout, seed * 1000 + 500 + i));
    }
  }
  return model;
}

}  // namespace surfgrad::nn
