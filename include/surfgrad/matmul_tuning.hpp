// The matmul autotuner (`surfgrad tune`) and its cache file.
//
// Winners are stored per (adapter, driver, dtype, shape class) in
// $SURFGRAD_TUNE_CACHE, else $XDG_CACHE_HOME/surfgrad/matmul-tuning.json, else
// ~/.cache/surfgrad/matmul-tuning.json. A file tuned on another adapter or driver is ignored;
// a corrupt one is ignored with a warning. matmul() falls back to a heuristic without an entry.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "surfgrad/tensor.hpp"

namespace surfgrad {

// Parameters of the register-tiled workgroup-memory kernel (matmul_reg_tiled.wgsl). bk = 0 means
// the direct form (matmul_direct.wgsl): no workgroup memory, bm = tm rows shared by a workgroup of
// bn / tn threads that read their operands straight from the buffers — the faster form on CPU
// adapters, where workgroup memory and barriers are emulated.
struct TiledParams {
  int bm = 64, bn = 64, bk = 16, tm = 4, tn = 4;
  bool double_buffer = false;
  int swizzle = 1;  // tile rows per group; 1 = row-major order
  bool f32_accumulate = true;
  bool direct() const { return bk == 0; }
  std::string str() const;
  bool operator==(const TiledParams&) const = default;
};

std::string matmul_shape_class(int64_t M, int64_t N, int64_t K);  // small, skinny-m, skinny-n, large
std::string tuning_cache_path();
std::string adapter_key(const gpu::Context& ctx);  // name | driver | backend | implementation

struct TuningCache {
  std::string adapter;
  std::map<std::string, TiledParams> entries;  // "f32/large" → parameters
  // An empty cache when the file is missing or from another adapter; when it is corrupt, also
  // sets *warning.
  static TuningCache load(const std::string& path, const std::string& adapter_key, std::string* warning);
  void save(const std::string& path) const;
};
void forget_tuning_cache();  // re-read the file at the next matmul

struct TuneOptions {
  std::vector<DType> dtypes = {DType::f32, DType::f16};
  std::vector<std::tuple<int64_t, int64_t, int64_t>> shapes = {
      {4096, 4096, 4096}, {64, 4096, 4096}, {4096, 64, 4096}, {192, 192, 192}};
  std::vector<TiledParams> candidates;  // empty: the built-in search space
  bool verbose = false;                 // report every candidate's time, not only the winners
  int reps = 5;
  std::string cache_path;  // empty: tuning_cache_path()
};
struct TuneResult {
  DType dtype;
  int64_t M, N, K;
  TiledParams params;
  double ms, tflops;
};
using TuneProgress = std::function<void(const std::string&)>;
std::vector<TuneResult> tune_matmul(const gpu::ContextPtr& ctx, const TuneOptions& opt,
                                    const TuneProgress& progress = {});

}  // namespace surfgrad
