// Losses, composed from differentiable primitives.
#include "nn/cross_entropy.hpp"
#include "surfgrad/nn.hpp"

namespace surfgrad::nn {

Var mse_loss(const Var& prediction, const Tensor& target) {
  if (prediction.shape() != target.shape())
    throw Error(ErrorKind::Shape, "mse_loss: prediction " + prediction.value().describe() + " and target " +
                                      target.describe() + " differ in shape");
  Var d = prediction - Var(target);
  return (d * d).mean();
}

Var cross_entropy(const Var& logits, const Tensor& labels) {
  if (logits.rank() != 2)
    throw Error(ErrorKind::Shape, "cross_entropy: logits must be [N, C], got " + logits.value().describe());
  if (labels.dtype() != DType::i32)
    throw Error(ErrorKind::DType, "cross_entropy: labels must be i32 class indices, got " + labels.describe());
  if (labels.rank() != 1 || labels.shape(0) != logits.shape(0))
    throw Error(ErrorKind::Shape,
                "cross_entropy: labels " + labels.describe() + " must be [N] for logits " + logits.value().describe());
  if (logits.value().dtype() == DType::f32 && logits.shape(0) > 0 && logits.shape(1) > 0)
    return fused_cross_entropy(logits, labels);
  Var picked = gather(logits.log_softmax(1), 1, labels.reshape({labels.shape(0), 1}));
  return -picked.mean();
}

Var bce_with_logits(const Var& logits, const Tensor& targets) {
  if (logits.shape() != targets.shape())
    throw Error(ErrorKind::Shape, "bce_with_logits: logits " + logits.value().describe() + " and targets " +
                                      targets.describe() + " differ in shape");
  Var t(targets);
  return (logits.relu() - logits * t + ((-logits.abs()).exp() + 1.0).log()).mean();
}

}  // namespace surfgrad::nn
