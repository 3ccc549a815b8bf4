// Progress of a long map computation (t-SNE, UMAP).
#pragma once
#include <functional>

namespace surfgrad {

// Called with iteration 0 once the kNN graph and affinities are ready, then every 50 iterations.
using MapProgress = std::function<void(int iteration, int total)>;

}  // namespace surfgrad
