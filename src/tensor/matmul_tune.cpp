// The matmul autotuner and its on-disk cache. `surfgrad tune` times candidate tile shapes of
// the register-tiled kernel per (adapter, driver, dtype, shape class), rejects any candidate
// that fails validation, and writes the winners to a JSON file under the user's cache
// directory. matmul() reads it once per adapter; without an entry it uses the heuristic.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "platform/host_resources.hpp"
#if SURFGRAD_HOST_HAS_FILES
#include <filesystem>
#include <fstream>
#endif

#include "matmul_problem.hpp"
#include "surfgrad/matmul_tuning.hpp"

namespace surfgrad {

std::string matmul_shape_class(int64_t M, int64_t N, int64_t K) {
  (void)K;
  if (M * N <= 256 * 256) return "small";
  if (M <= 128) return "skinny-m";
  if (N <= 128) return "skinny-n";
  return "large";
}

std::string tuning_cache_path() {
  if (const char* p = std::getenv("SURFGRAD_TUNE_CACHE")) return p;
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    base = x;
  else if (const char* h = std::getenv("HOME"))
    base = std::string(h) + "/.cache";
  else
    base = ".";
  return base + "/surfgrad/matmul-tuning.json";
}

std::string adapter_key(const gpu::Context& ctx) {
  const auto& i = ctx.info();
  return i.name + " | " + i.driver + " | " + i.backend + " | " + i.implementation;
}

namespace {

struct Memo {
  platform::Mutex mutex;
  std::string path, key;
  TuningCache cache;
  bool loaded = false;
};
Memo& memo() {
  static Memo m;  // the parsed file, per process: reading it on every matmul would be wasteful
  return m;
}

}  // namespace

// The file (format 1, unchanged since the hand-written parser):
//   {"format": 1, "adapter": "<adapter_key>", "entries": {"f32/large": [bm, bn, bk, tm, tn, db, swizzle, f32acc]}}
// with db and f32acc as 0/1. Read and written with nlohmann-json.
TuningCache TuningCache::load(const std::string& path, const std::string& key, std::string* warning) {
  TuningCache c;
  c.adapter = key;
#if SURFGRAD_HOST_HAS_FILES
  std::ifstream in(path);
  if (!in) return c;  // no file: nothing tuned yet
#else
  // The browser build has no file system: nothing tuned is remembered across page loads.
  std::string in;
  (void)warning;
  return c;
#endif
  auto fail = [&](const std::string& why) {
    if (warning)
      *warning = "ignoring the matmul tuning cache '" + path + "': " + why + "; run `surfgrad tune` to rebuild it";
    return TuningCache{key, {}};
  };
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return fail("not JSON");
  if (doc.value("format", nlohmann::json()) != 1) return fail("not a version-1 tuning file");
  auto adapter = doc.find("adapter");
  if (adapter == doc.end() || !adapter->is_string()) return fail("no adapter field");
  if (adapter->get<std::string>() != key) return c;  // tuned on another adapter or driver: stale, not corrupt
  auto entries = doc.find("entries");
  if (entries == doc.end() || !entries->is_object()) return fail("no entries");
  for (auto& [name, e] : entries->items()) {
    bool shaped = e.is_array() && e.size() == 8 &&
                  std::all_of(e.begin(), e.end(), [](const nlohmann::json& v) { return v.is_number_integer(); });
    if (!shaped) return fail("entry " + name + " is not 8 integers");
    auto at = [&](size_t i) { return e[i].get<int64_t>(); };
    if (at(5) < 0 || at(5) > 1 || at(7) < 0 || at(7) > 1) return fail("entry " + name + " has flags other than 0 or 1");
    for (size_t i = 0; i < 8; ++i)
      if (at(i) < 0 || at(i) > 4096) return fail("entry " + name + " has impossible tile sizes");
    TiledParams p{int(at(0)), int(at(1)), int(at(2)), int(at(3)), int(at(4)), at(5) == 1, int(at(6)), at(7) == 1};
    if (p.bm <= 0 || p.bn <= 0 || p.bk < 0 || (p.bk == 0 && p.bm != p.tm) || p.tm <= 0 || p.tn <= 0 || p.bm % p.tm ||
        p.bn % p.tn || p.bm > 512 || p.bn > 512 || p.swizzle <= 0)
      return fail("entry " + name + " has impossible tile sizes");
    c.entries[name] = p;
  }
  return c;
}

void TuningCache::save(const std::string& path) const {
#if !SURFGRAD_HOST_HAS_FILES
  throw Error(ErrorKind::IO, "'" + path + "': the browser build has no file system to keep the tuning cache in");
#else
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  nlohmann::json entries_json = nlohmann::json::object();
  for (auto& [k, p] : entries)
    entries_json[k] = {p.bm, p.bn, p.bk, p.tm, p.tn, p.double_buffer ? 1 : 0, p.swizzle, p.f32_accumulate ? 1 : 0};
  nlohmann::json doc = {{"format", 1}, {"adapter", adapter}, {"entries", entries_json}};
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw Error(ErrorKind::IO, "'" + tmp + "': cannot write the tuning cache");
    out << doc.dump(2) << "\n";
    if (!out.flush()) throw Error(ErrorKind::IO, "'" + tmp + "': cannot write the tuning cache");
  }
  std::filesystem::rename(tmp, path);  // atomic: readers never see half a file
#endif
}

void forget_tuning_cache() {
  platform::LockGuard lock(memo().mutex);
  memo().loaded = false;
}

TiledParams matmul_params(const gpu::ContextPtr& ctx, DType dtype, int64_t M, int64_t N, int64_t K, bool vec4_staging) {
  {
    Memo& m = memo();
    platform::LockGuard lock(m.mutex);
    std::string path = tuning_cache_path(), key = adapter_key(*ctx);
    if (!m.loaded || m.path != path || m.key != key) {
      std::string warning;
      m.cache = TuningCache::load(path, key, &warning);
      if (!warning.empty()) std::fprintf(stderr, "surfgrad: %s\n", warning.c_str());
      m.path = path, m.key = key, m.loaded = true;
    }
    auto it = m.cache.entries.find(std::string(dtype_name(dtype)) + "/" + matmul_shape_class(M, N, K));
    if (it != m.cache.entries.end() && tiled_unsupported(*ctx, it->second, dtype).empty()) return it->second;
  }
  // Heuristic. CPU adapters (lavapipe) emulate workgroup memory and barriers: there, register
  // tiles read straight from the buffers run 1.6–1.7× faster (BENCHMARKS.md, issue 5's CPU
  // timings). Elsewhere smaller products get smaller tiles (more workgroups), large ones 8×8 per
  // thread, double-buffered in registers: 128×256×8 tiles where B is staged as vec4s, else
  // 128×128×16 (the H200's winners, BENCHMARKS.md). The first candidate the adapter can run
  // (threads, workgroup memory) wins.
  TiledParams p;
  if (matmul_cpu_choices(*ctx)) {
    p = (M >= 64 && N >= 64) ? TiledParams{8, 128, 0, 8, 8, false, 1, true}
                             : TiledParams{4, 64, 0, 4, 4, false, 1, true};
    if (tiled_unsupported(*ctx, p, dtype).empty()) return p;
  }
  // 128×128 tiles need enough of them to fill a large GPU, and K enough to amortise them: at
  // 1024³ (64 tiles) 64×64 tiles reach 22.9 TFLOP/s against 14.6, at 4096×4096×64 20.1
  // against 18.2 (H200, v11).
  std::vector<TiledParams> order;
  if (M * N >= 2048 * 2048 && K >= 256) {
    // 512 threads (16 warps) hide more of the staging than 256: f32 38.5–39.2 TFLOP/s against
    // 35.1–35.9 (H200, v15), f16 with f32 accumulation at BK 16 35.1–35.3 against 31.6–31.8
    // (v16), where the adapter allows that many threads.
    if (vec4_staging) order.push_back({128, 256, dtype == DType::f16 ? 16 : 8, 8, 8, true, 1, true});
    if (vec4_staging) order.push_back({128, 128, 8, 8, 8, true, 1, true});
    order.push_back({128, 128, 16, 8, 8, true, 8, true});
    order.push_back({128, 128, 8, 8, 8, true, 1, true});
    order.push_back({128, 128, 8, 8, 8, false, 1, true});
  }
  // Skinny products run split-K (matmul.cpp): there double-buffered 64×64 tiles won the tuner's
  // sweep at 64×4096×4096 (0.088 ms against 0.095 ms, H200, 2026-11-26).
  if (M <= 128 && M >= 64 && N >= 64) order.push_back({64, 64, 16, 4, 4, true, 1, true});
  if (M >= 64 && N >= 64) order.push_back({64, 64, 16, 4, 4, false, 1, true});
  order.push_back({32, 32, 16, 2, 2, false, 1, true});
  for (const TiledParams& c : order)
    if (tiled_unsupported(*ctx, c, dtype).empty()) return c;
  return order.back();
}

std::vector<TiledParams> tuning_candidates() {
  std::vector<TiledParams> out;
  const int tiles[][4] = {{128, 256, 8, 8},
                          {128, 128, 8, 8},
                          {128, 64, 8, 4},
                          {64, 128, 4, 8},
                          {64, 64, 4, 4},
                          {128, 128, 8, 4},
                          {64, 64, 8, 8},
                          {32, 32, 2, 2},
                          {32, 64, 2, 4},
                          // 64-row tiles of 8×8 a thread, for skinny products (split K)
                          {64, 128, 8, 8},
                          {64, 256, 8, 8}};
  for (auto& t : tiles)
    for (int bk : {8, 16})
      for (bool db : {false, true})
        for (int sw : {1, 8}) out.push_back({t[0], t[1], bk, t[2], t[3], db, sw, true});
  for (int t : {4, 8}) out.push_back({t, 16 * t, 0, t, t, false, 1, true});  // direct (CPU adapters)
  return out;
}

std::vector<TuneResult> tune_matmul(const gpu::ContextPtr& ctx, const TuneOptions& opt, const TuneProgress& progress) {
  std::string path = opt.cache_path.empty() ? tuning_cache_path() : opt.cache_path;
  TuningCache cache = TuningCache::load(path, adapter_key(*ctx), nullptr);
  std::vector<TiledParams> candidates = opt.candidates.empty() ? tuning_candidates() : opt.candidates;
  std::vector<TuneResult> results;
  for (DType dtype : opt.dtypes) {
    if (dtype == DType::f16 && !ctx->features().shader_f16) continue;
    for (auto [M, N, K] : opt.shapes) {
      Tensor a = Tensor::uniform(ctx, {M, K}, 11, -1, 1, dtype), b = Tensor::uniform(ctx, {K, N}, 12, -1, 1, dtype);
      MatmulProblem prob = make_problem(a, b);
      TuneResult best{dtype, M, N, K, {}, 1e30, 0};
      const double flop = 2.0 * double(M) * double(N) * double(K);
      // Compile and validate every candidate once (split-K where Tensor::matmul would split).
      std::vector<TiledParams> valid;
      for (TiledParams p : candidates) {
        if (dtype == DType::f16) p.f32_accumulate = true;
        if (!tiled_unsupported(*ctx, p, dtype).empty()) continue;
        run_matmul_with(prob, p);
        double err = matmul_error(prob, 64, 5);
        if (!(err <= (dtype == DType::f16 ? 2e-3 : 1e-5))) {
          if (progress) progress("rejected " + p.str() + ": error " + std::to_string(err));
          continue;
        }
        valid.push_back(p);
      }
      // Then time them all in two rounds and keep each one's better median. On a machine just
      // started, one tune of 88 candidates measured a run of them 3-5× slower than the same tiles
      // timed a minute later (the H200, 2026-11-26): a second round keeps one bad stretch from
      // deciding the pick.
      std::vector<double> fastest(valid.size(), 1e30);
      for (int round = 0; round < 2; ++round)
        for (size_t c = 0; c < valid.size(); ++c) {
          const TiledParams& p = valid[c];
          // An idle GPU sits at its lowest clock (the H200 at 345 of 1,980 MHz): 30 ms of work
          // first.
          for (auto w0 = std::chrono::steady_clock::now();
               std::chrono::steady_clock::now() - w0 < std::chrono::milliseconds(30);) {
            run_matmul_with(prob, p);
            ctx->sync();
          }
          std::vector<double> t;
          for (int r = 0; r < opt.reps; ++r) {
            t.push_back(ctx->timed_ms([&] { run_matmul_with(prob, p); }));
          }
          std::sort(t.begin(), t.end());
          fastest[c] = std::min(fastest[c], t[t.size() / 2]);
        }
      for (size_t c = 0; c < valid.size(); ++c) {
        const TiledParams& p = valid[c];
        double ms = fastest[c];
        if (progress && opt.verbose) {
          char line[256];
          std::snprintf(line, sizeof line, "  candidate %s: %.3f ms, %.2f TFLOP/s", p.str().c_str(), ms,
                        flop / (ms * 1e9));
          progress(line);
        }
        if (ms < best.ms) best = {dtype, M, N, K, p, ms, flop / (ms * 1e9)};
      }
      if (best.ms < 1e30) {
        cache.entries[std::string(dtype_name(dtype)) + "/" + matmul_shape_class(M, N, K)] = best.params;
        results.push_back(best);
        if (progress) {
          char line[256];
          std::snprintf(line, sizeof line, "%s %lldx%lldx%lld (%s): %s, %.3f ms, %.2f TFLOP/s", dtype_name(dtype),
                        (long long)M, (long long)N, (long long)K, matmul_shape_class(M, N, K).c_str(),
                        best.params.str().c_str(), best.ms, best.tflops);
          progress(line);
        }
      }
    }
  }
  cache.save(path);
  forget_tuning_cache();
  return results;
}

}  // namespace surfgrad
