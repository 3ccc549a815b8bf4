// t-SNE on the GPU: affinities from the kNN graph, attraction, exact or FFT repulsion.
#pragma once
#include <cstdint>

#include "surfgrad/knn.hpp"
#include "surfgrad/map_progress.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad {

// How t-SNE computes its repulsion: Exact sums all N² pairs; Fft interpolates on a grid and
// convolves by FFT (FIt-SNE's method: O(N) in the points); Auto takes Fft above 5,000 points.
enum class Repulsion { Auto, Exact, Fft };

struct TsneOptions {
  double perplexity = 30;
  int iterations = 750;
  int exaggeration_iterations = 250;  // early exaggeration, with momentum 0.5; then 0.8
  double early_exaggeration = 12;
  double learning_rate = 0;  // 0: max(N / early_exaggeration, 50), as openTSNE (Belkina et al.: N / 12)
  double max_step_norm = 5;  // updates are clipped to this length (openTSNE's default); 0: off
  uint64_t seed = 1;
  Repulsion repulsion = Repulsion::Auto;
  double grid_spacing = 0.5;  // FFT grid: at most this far between nodes (embedding units)
  bool pca_init = true;       // start from the first two principal components scaled to std 1e-4
                              // (as openTSNE), else from N(0, 1e-4²)
};

// t-SNE of f32 [N, D] points to f32 [N, 2]: exact kNN (k = 3·perplexity), per-point bandwidths
// by bisection, symmetrised sparse P; attraction over the kNN graph (deterministic: incoming
// edges are gathered, not scattered with atomics); repulsion exact or by FFT-accelerated
// interpolation (deterministic too: the grid sums are 64-bit integers); momentum and gains as
// the reference implementation.
// `neighbours`, where given, are the k = ⌊3·perplexity⌋ nearest neighbours (as
// nearest_neighbours gives them); else they are computed.
Tensor tsne(const Tensor& x, const TsneOptions& options = {}, const MapProgress& progress = {},
            const KnnResult* neighbours = nullptr);
// The k t-SNE uses for a perplexity.
int tsne_neighbours(double perplexity, int64_t n);

// The repulsion term alone, for f32 positions [N, 2]: [N, 4] rows (Σ_j q_ij²·(y_i − y_j),
// Σ_{j≠i} q_ij, 0) with q_ij = 1 / (1 + |y_i − y_j|²). Auto means Fft here.
Tensor tsne_repulsion(const Tensor& y, Repulsion method = Repulsion::Auto, double grid_spacing = 0.5);

}  // namespace surfgrad
