// The map call shared by sg_map (points handed over whole) and sg_map_held (points streamed into
// the GPU by points_web.cpp): options from JavaScript's JSON, the checks, map_points with progress
// events to JavaScript, the result's JSON in the session.
#pragma once
#include <cstdint>

#include "surfgrad/map_pipeline.hpp"

namespace surfgrad::web {

// The options object surfgrad.js passes (camelCase names) → MapOptions, then validate() and
// check_map_fits() for a job of n × d points: the CLI's and Python's messages, before any upload.
MapOptions prepare_map(const char* method, const char* options_json, int64_t n, int64_t d);

// Maps `points` (released as map_points does), writes the n × 2 embedding to `out` and the
// phases, k, ... to the session's result JSON. Progress goes to JavaScript every `progress_every`
// optimisation steps with the current layout (0: without layouts).
void run_map(PointBlocks points, const MapOptions& options, float* out, int32_t progress_every);

// Starts compiling the map's kernels for n × d points (the tensor ops', the kNN's, the layout's) on the GPU
// process's workers, unless prewarming is off (prewarm_web.cpp). prepare_map calls it.
void prewarm_map(const gpu::ContextPtr& ctx, const MapOptions& options, int64_t n, int64_t d);

// Starts compiling the kernels sg_points_builtin runs to make n built-in points (the page's
// builtinPoints), before the map's: they are needed first.
void prewarm_builtin_points(const gpu::ContextPtr& ctx, int64_t n);

}  // namespace surfgrad::web
