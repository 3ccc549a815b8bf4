// Embedding maps (t-SNE, UMAP) and what they stand on: kNN, PCA, quality measures. One header
// per idea; this one includes them all.
#pragma once
#include "surfgrad/knn.hpp"
#include "surfgrad/map_pipeline.hpp"
#include "surfgrad/map_progress.hpp"
#include "surfgrad/map_quality.hpp"
#include "surfgrad/pca.hpp"
#include "surfgrad/point_blocks.hpp"
#include "surfgrad/tsne.hpp"
#include "surfgrad/umap.hpp"
