// Quality measures of an embedding map: kNN recall, 10-NN accuracy, trustworthiness, KL.
#pragma once
#include <cstdint>

#include "surfgrad/tensor.hpp"

namespace surfgrad {

struct MapQuality {
  double knn_recall = 0;       // share of each point's 10 nearest neighbours in D kept in 2-D
  double knn_accuracy = -1;    // 10-NN majority-vote label accuracy in 2-D (−1 without labels)
  double trustworthiness = 0;  // Venna & Kaski's T(10), over a sample of up to 10,000 points
  double kl_divergence = 0;    // t-SNE's KL(P‖Q) on a sample of up to 2,000 points (perplexity 30)
};
// labels: i32 [N] or an undefined Tensor.
MapQuality evaluate_map(const Tensor& x, const Tensor& embedding, const Tensor& labels, int k = 10);

// Trustworthiness T(k) (Venna & Kaski 2001): 1 − 2/(S·k·(2N − 3k − 1)) · Σ (r(i,j) − k) over the
// 2-D k-nearest neighbours j of each sampled point i that are not among its k nearest in D,
// r(i,j) being j's rank by distance from i in D. Sampled points: every ⌈N / sample⌉-th.
// block_rows: sampled rows per distance block (0: sized from the binding limit).
double trustworthiness(const Tensor& x, const Tensor& embedding, int k = 10, int64_t sample = 10000,
                       int64_t block_rows = 0);

// t-SNE's objective KL(P‖Q) restricted to a sample of every ⌈N / sample⌉-th point, computed
// exactly in float64 on the host: P from the sample's D-dimensional distances at `perplexity`
// (bisection, symmetrised), Q ∝ 1 / (1 + |y_i − y_j|²) over the sample.
double kl_divergence(const Tensor& x, const Tensor& embedding, double perplexity = 30, int64_t sample = 2000);

}  // namespace surfgrad
