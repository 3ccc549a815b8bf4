// A map method (t-SNE, UMAP) behind one shape: the neighbours it wants, the names of its phases
// and steps, its start, its layout and its share of the memory estimate. map_points, map_graph,
// validate() and the estimate ask this record instead of branching on the method, so a third
// method is one record (map_method.cpp), its options (map_option_schema.cpp) and its kernels.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "surfgrad/gpu.hpp"
#include "surfgrad/knn.hpp"
#include "surfgrad/map_options.hpp"
#include "surfgrad/map_progress.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad {

struct MapMethodSpec {
  MapMethod id;
  const char* name;         // "tsne": the word every front end takes
  const char* title;        // "t-SNE", for messages and reports
  const char* graph_phase;  // the phase between kNN and optimisation: "affinities", "memberships"
  const char* step;         // "iteration", "epoch"
  const char* k_rule;       // how k follows from the options: "⌊3·perplexity⌋"
  const char* calmer;       // the flags that calm a diverging layout, for its error message
  // Neighbours per point for n points.
  int (*neighbours)(const MapOptions& options, int64_t n);
  // "perplexity 30, 750 iterations": the options a report names.
  std::string (*describe)(const MapOptions& options);
  // Seeded random positions, where there are no points to take components of or pca_start is off.
  Tensor (*random_start)(const gpu::ContextPtr& ctx, int64_t n, uint64_t seed);
  // The layout of the features' rows from their kNN graph, from `start` where given (else the
  // method's PCA start); progress at every report step. options.seed is the method's seed.
  Tensor (*layout)(const Tensor& features, const MapOptions& options, const MapProgress& progress,
                   const KnnResult* neighbours, const Tensor* start);
  // Host bytes beyond the kNN lists and edges (UMAP's fuzzy union table), for n points and k.
  uint64_t (*extra_host_bytes)(uint64_t n, uint64_t k);
  // Takes neighbour descent's lists in row blocks (t-SNE) rather than as one tensor each.
  bool lists_in_blocks;
  // Refuses options whose cost explodes for n points (t-SNE: a grid spacing no FFT grid within
  // its budget can honour), naming the option; check_map_fits calls it before any work.
  void (*check_cost)(const MapOptions& options, int64_t n);
};

const MapMethodSpec& map_method(MapMethod method);
const std::vector<const MapMethodSpec*>& map_methods();  // every method, in MapMethod's order

// The method's own options against their ranges for n points (map_graph: no points, no PCA).
void validate_layout_options(const MapOptions& options, int64_t n);

}  // namespace surfgrad
