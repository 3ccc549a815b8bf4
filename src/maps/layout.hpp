// t-SNE and UMAP from given starting positions: what map_points runs when MapOptions::init is
// set. tsne() and umap() are these with no start (their own PCA or random one).
#pragma once
#include "surfgrad/knn.hpp"
#include "surfgrad/map_progress.hpp"
#include "surfgrad/tsne.hpp"
#include "surfgrad/umap.hpp"

namespace surfgrad {

// `start`, where given, is f32 [N, 2] on x's context; it is copied, not scaled.
Tensor tsne_layout(const Tensor& x, const TsneOptions& options, const MapProgress& progress,
                   const KnnResult* neighbours, const Tensor* start);
Tensor umap_layout(const Tensor& x, const UmapOptions& options, const MapProgress& progress,
                   const KnnResult* neighbours, const Tensor* start);

// UMAP's symmetrised edge weights from the directed memberships w (f32 [N, K]) of the lists
// `indices` (i32 [N, K]): the fuzzy union w + wᵀ − w∘wᵀ (halved on each direction of a pair
// present both ways), divided by its largest value, 0 below 1/epochs. f32 [N, K].
Tensor umap_fuzzy_union(const Tensor& w, const Tensor& indices, int epochs);

}  // namespace surfgrad
