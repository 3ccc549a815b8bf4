// Pipelines compiled ahead in the browser (issues 32 and 35; docs/cold_start.md): the map's
// kernels start compiling on the GPU process's workers (createComputePipelineAsync, through
// Context::prewarm) as soon as its options are checked, while the points are read or made and
// uploaded, so that each phase finds its pipelines built or under way. The switch and the
// counters JavaScript reads (surfgrad.js's init({prewarm}) and stats().pipelines).
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "map_web.hpp"
#include "maps/layout_prewarm.hpp"
#include "surfgrad/error.hpp"
#include "surfgrad/tensor.hpp"
#include "tensor/op_prewarm.hpp"
#include "web_session.hpp"

namespace surfgrad::web {

void prewarm_map(const gpu::ContextPtr& ctx, const MapOptions& options, int64_t n, int64_t d) {
  try {
    // The tensor ops' (input checks, PCA, the start, reductions) first: they are needed first.
    // map_points names them again (no-ops then: each key is started once). With n and d known
    // they also queue the one exact kNN kernel the map takes (small sets' or the streaming one;
    // none for the approximate kNN), not both.
    prewarm_map_tensor_ops(ctx, options, n, d);
    prewarm_layout_kernels(ctx, options, n, map_neighbours(options, n));
  } catch (const Error&) {
    // Prewarming is only a head start: the map builds what it needs and reports any failure.
  }
}

void prewarm_builtin_points(const gpu::ContextPtr& ctx, int64_t n) {
  // Mirrors builtin_point_blocks (src/io/builtin_points.cpp) on small tensors of the same
  // layouts: normal noise, each block's centres gathered by label (index_select of the [10, 768]
  // centres by an i32 slice from the start) plus its noise. web/tests/prewarm_check.mjs maps
  // built-in points and counts what is still built at first use.
  (void)n;  // (the kernels do not depend on it: every block's rows are a multiple of 4 × 768)
  prewarm_ops(ctx, [&] {
    Tensor::normal(ctx, {4, 768}, 8);
    Tensor centres = Tensor::empty(ctx, {10, 768}), labels = Tensor::empty(ctx, {4}, DType::i32);
    add(index_select(centres, 0, labels.slice(0, 0, 4)), Tensor::empty(ctx, {4, 768}));
  });
}

}  // namespace surfgrad::web

using namespace surfgrad;
using surfgrad::web::guarded;
using surfgrad::web::session;

// on = 0: nothing is compiled ahead (the first use of each kernel starts its compile and waits
// for it, still off the GPU process's main thread). The library reads SURFGRAD_PREWARM, as
// natively. Returns 0.
SG_EXPORT(sg_set_prewarm) int sg_set_prewarm(int32_t on) {
  return guarded([&] { setenv("SURFGRAD_PREWARM", on ? "1" : "0", 1); });
}

// The context's start-up counters (Context::startup_stats) as JSON: the pipelines built, how
// many a first use built (not prewarmed) and how many it waited for. Its own string, valid until
// the next call (not sg_result_json(), which a map's result may be waiting in); 0 on failure.
// Never creates a device (that waits, and this is called from progress handlers): zeros until
// init() has made one.
SG_EXPORT(sg_startup_stats) const char* sg_startup_stats() {
  static std::string text;
  int rc = guarded([] {
    gpu::Context::StartupStats s;
    if (session().ctx) s = session().ctx->startup_stats();
    text = nlohmann::json({{"pipelines", s.pipelines},
                           {"atUse", s.built_at_use_labels},  // (names: what still compiles on the critical path)
                           {"builtAtUse", s.built_at_use},
                           {"atUseMs", s.at_use_ms},
                           {"prewarmed", s.prewarmed},
                           {"prewarmWaits", s.prewarm_waits},
                           {"prewarmWaitMs", s.prewarm_wait_ms},
                           {"deviceMs", s.device_ms}})
               .dump();
  });
  return rc == 0 ? text.c_str() : nullptr;
}

// For the browser suite only (tensor.js's `testing.brokenKernel`): a kernel the browser's WGSL
// compiler rejects, prewarmed (prewarmed != 0) or not, then asked for: its first use must throw
// the compiler's message naming the kernel, as natively. Returns -1 with that error (0 would be
// a bug: the kernel was accepted).
SG_EXPORT(sg_test_broken_kernel) int sg_test_broken_kernel(int32_t prewarmed) {
  static int calls = 0;
  return guarded([&] {
    gpu::ContextPtr ctx = session().context();
    const std::string key = "broken_for_tests|" + std::to_string(++calls);  // a fresh build each call
    const std::string entry = "broken_for_tests";
    const std::string wgsl =
        "@compute @workgroup_size(1) fn broken_for_tests() { let x = no_such_function_for_tests(); }";
    if (prewarmed && !ctx->prewarm(key, wgsl, entry, false))
      throw Error(ErrorKind::Value, "broken_for_tests: prewarm started nothing (is prewarming off?)");
    ctx->kernel(key, [&] { return wgsl; }, entry, false);
  });
}
