// `surfgrad bench matmul` (the ladder, validated then timed, beside cuBLAS where PyTorch with
// CUDA is present) and `surfgrad tune` (the autotuner).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "surfgrad/matmul_tuning.hpp"
#include "tensor/matmul_problem.hpp"

using namespace surfgrad;

namespace {

struct Size {
  int64_t M, N, K;
  std::string str() const { return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K); }
};

std::vector<Size> parse_sizes(const std::string& list) {
  std::vector<Size> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    Size s{};
    if (std::sscanf(item.c_str(), "%ldx%ldx%ld", &s.M, &s.N, &s.K) != 3 || s.M <= 0 || s.N <= 0 || s.K <= 0)
      throw Error(ErrorKind::Value, "bench matmul: size '" + item + "' is not MxNxK");
    out.push_back(s);
  }
  return out;
}

// cuBLAS TFLOP/s per size and kind ("fp32", "fp16"), from bench/torch_matmul.py; empty when
// PyTorch with CUDA is not on this machine.
std::map<std::string, std::map<std::string, double>> cublas(const std::string& script, const std::vector<Size>& sizes) {
  std::map<std::string, std::map<std::string, double>> out;
  std::string cmd = "python3 '" + script + "'";
  for (auto& s : sizes) cmd += " " + s.str();
  cmd += " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::string text;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) text.append(buf, n);
  if (pclose(p) != 0) return out;
  std::regex entry(R"re("(\d+x\d+x\d+)"\s*:\s*\{\s*"fp32"\s*:\s*([\d.eE+-]+)\s*,\s*"tf32"\s*:\s*([\d.eE+-]+)\s*,\s*"fp16"\s*:\s*([\d.eE+-]+))re");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), entry); it != std::sregex_iterator(); ++it) {
    out[(*it)[1]]["fp32"] = std::stod((*it)[2]);
    out[(*it)[1]]["tf32"] = std::stod((*it)[3]);
    out[(*it)[1]]["fp16"] = std::stod((*it)[4]);
  }
  return out;
}

double time_variant(const gpu::ContextPtr& ctx, const std::function<void()>& run, int max_reps) {
  std::vector<double> t;
  double total = 0;
  for (int r = 0; r < max_reps && (r < 3 || total < 300); ++r) {
    ctx->begin_timing();
    auto w0 = std::chrono::steady_clock::now();
    run();
    double ms = ctx->end_timing_ms();
    ctx->sync();
    if (ms <= 0) ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
    t.push_back(ms);
    total += ms;
    if (ms > 2000) break;  // slow rungs at large sizes: one timed run is enough
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}


}  // namespace

int cmd_bench_matmul(const gpu::ContextPtr& ctx, int argc, char** argv) {
  std::string sizes_arg = "1024x1024x1024,4096x4096x4096,8192x8192x8192,64x4096x4096,4096x4096x64,4096x4096x768";
  std::string only, json, script = std::string(SURFGRAD_SOURCE_DIR) + "/bench/torch_matmul.py";
  int reps = 10;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(ErrorKind::Value, "bench matmul: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--sizes") sizes_arg = next();
    else if (a == "--variants") only = "," + next() + ",";
    else if (a == "--json") json = next();
    else if (a == "--torch-script") script = next();
    else if (a == "--reps") reps = std::atoi(next().c_str());
    else throw Error(ErrorKind::Value, "bench matmul: unknown option " + a + " (--sizes, --variants, --json, --reps, --torch-script)");
  }
  std::vector<Size> sizes = parse_sizes(sizes_arg);
  auto ref = cublas(script, sizes);
  std::printf("bench matmul on %s (%s, %s, driver %s), %s\n", ctx->info().name.c_str(), ctx->info().backend.c_str(),
              ctx->info().implementation.c_str(), ctx->info().driver.c_str(), today().c_str());
  std::printf("%s\n", ref.empty() ? "cuBLAS: not measured (no PyTorch with CUDA here)"
                                  : "cuBLAS via PyTorch measured in this run: fp32 (TF32 off) for f32 rows, fp16 for f16 rows");
  std::printf("%-15s %-22s %-4s %10s %9s %10s %9s %8s\n", "size", "variant", "rung", "ms", "TFLOP/s", "max err", "cuBLAS", "ratio");
  std::string rows;
  std::vector<MatmulVariant> variants = matmul_variants();
  variants.push_back({13, "tuned", "what Tensor::matmul runs: the autotuner's pick or the heuristic", 1e-5,
                      [](const MatmulProblem&) { return std::string(); },
                      [](const MatmulProblem& p) {
                        TiledParams params = matmul_params(p.ctx, p.dtype(), p.M, p.N, p.K, matmul_vec4_staging(p));
                        return std::function<void()>([p, params] { run_tiled(p, params); });
                      }});
  variants.push_back({13, "f16-tuned", "Tensor::matmul on f16 tensors", 2e-3, [&](const MatmulProblem&) {
                        return ctx->features().shader_f16 ? std::string() : std::string("no shader-f16");
                      },
                      [](const MatmulProblem& p) {
                        TiledParams params = matmul_params(p.ctx, p.dtype(), p.M, p.N, p.K, matmul_vec4_staging(p));
                        return std::function<void()>([p, params] { run_tiled(p, params); });
                      }});
  for (const Size& s : sizes) {
    Tensor a32 = Tensor::uniform(ctx, {s.M, s.K}, 1, -1, 1), b32 = Tensor::uniform(ctx, {s.K, s.N}, 2, -1, 1);
    Tensor a16, b16;
    if (ctx->features().shader_f16) a16 = a32.cast(DType::f16), b16 = b32.cast(DType::f16);
    double flop = 2.0 * double(s.M) * double(s.N) * double(s.K);
    for (const auto& v : variants) {
      if (!only.empty() && only.find("," + v.name + ",") == std::string::npos) continue;
      bool f16 = v.name.rfind("f16", 0) == 0;
      std::string why;
      if (f16 && !a16.defined()) why = "no shader-f16";
      MatmulProblem p = make_problem(f16 && a16.defined() ? a16 : a32, f16 && b16.defined() ? b16 : b32);
      if (why.empty()) why = v.unsupported(p);
      if (!why.empty()) {
        std::printf("%-15s %-22s %-4d skipped: %s\n", s.str().c_str(), v.name.c_str(), v.rung, why.c_str());
        continue;
      }
      auto run = v.prepare(p);
      p.c.assign(scalar_like(p.c, 0));
      run();  // compile, warm up, and validate before timing
      double err = matmul_error(p, 256, 99);
      bool valid = err <= v.tolerance;
      double ms = valid ? time_variant(ctx, run, reps) : 0;
      double tf = valid ? flop / (ms * 1e9) : 0;
      double cu = 0;
      if (auto it = ref.find(s.str()); it != ref.end()) cu = it->second[f16 ? "fp16" : "fp32"];
      char line[256];
      if (!valid)
        std::snprintf(line, sizeof line, "%-15s %-22s %-4d REJECTED: error %.2e > %.0e", s.str().c_str(), v.name.c_str(),
                      v.rung, err, v.tolerance);
      else if (cu > 0)
        std::snprintf(line, sizeof line, "%-15s %-22s %-4d %10.3f %9.2f %10.2e %9.1f %7.1f%%", s.str().c_str(),
                      v.name.c_str(), v.rung, ms, tf, err, cu, 100 * tf / cu);
      else
        std::snprintf(line, sizeof line, "%-15s %-22s %-4d %10.3f %9.2f %10.2e %9s %8s", s.str().c_str(), v.name.c_str(),
                      v.rung, ms, tf, err, "-", "-");
      std::printf("%s\n", line);
      std::fflush(stdout);
      char row[512];
      std::snprintf(row, sizeof row,
                    "%s    {\"size\": \"%s\", \"variant\": \"%s\", \"rung\": %d, \"valid\": %s, \"ms\": %.5f, "
                    "\"tflops\": %.4f, \"max_error\": %.3e, \"cublas_tflops\": %.3f}",
                    rows.empty() ? "" : ",\n", s.str().c_str(), v.name.c_str(), v.rung, valid ? "true" : "false", ms, tf,
                    err, cu);
      rows += row;
    }
  }
  if (!json.empty()) {
    FILE* f = std::fopen(json.c_str(), "w");
    if (!f) throw Error(ErrorKind::IO, "'" + json + "': cannot write");
    std::string args;
    for (int i = 0; i < argc; ++i) args += std::string(i ? " " : "") + argv[i];
    std::fprintf(f,
                 "{\n  \"bench\": \"matmul\",\n  \"command\": \"surfgrad bench matmul %s\",\n  \"adapter\": \"%s\",\n"
                 "  \"driver\": \"%s\",\n  \"implementation\": \"%s\",\n  \"date\": \"%s\",\n  \"rows\": [\n%s\n  ]\n}\n",
                 args.c_str(), ctx->info().name.c_str(), ctx->info().driver.c_str(), ctx->info().implementation.c_str(),
                 today().c_str(), rows.c_str());
    std::fclose(f);
  }
  return 0;
}

int cmd_tune(const gpu::ContextPtr& ctx, int argc, char** argv) {
  TuneOptions opt;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--sizes" && i + 1 < argc) {
      opt.shapes.clear();
      for (auto& s : parse_sizes(argv[++i])) opt.shapes.emplace_back(s.M, s.N, s.K);
    } else if (a == "--f32-only") {
      opt.dtypes = {DType::f32};
    } else if (a == "--verbose") {
      opt.verbose = true;
    } else if (a == "--candidates" && i + 1 < argc) {
      // BMxBNxBK:TMxTN[:db], comma-separated: try these tiles instead of the built-in space.
      std::string list = argv[++i];
      size_t at = 0;
      while (at < list.size()) {
        size_t end = list.find(',', at);
        std::string c = list.substr(at, end == std::string::npos ? std::string::npos : end - at);
        TiledParams p;
        char db[8] = {0};
        if (std::sscanf(c.c_str(), "%dx%dx%d:%dx%d:%7s", &p.bm, &p.bn, &p.bk, &p.tm, &p.tn, db) < 5)
          throw Error(ErrorKind::Value, "tune: candidate '" + c + "' is not BMxBNxBK:TMxTN[:db]");
        p.double_buffer = std::string(db) == "db";
        opt.candidates.push_back(p);
        at = end == std::string::npos ? list.size() : end + 1;
      }
      opt.verbose = true;
    } else {
      throw Error(ErrorKind::Value, "tune: unknown option " + a + " (--sizes MxNxK,..., --f32-only, --verbose, --candidates BMxBNxBK:TMxTN[:db],...)");
    }
  }
  std::printf("tuning matmul on %s; cache: %s\n", ctx->info().name.c_str(), tuning_cache_path().c_str());
  auto results = tune_matmul(ctx, opt, [](const std::string& line) { std::printf("  %s\n", line.c_str()); std::fflush(stdout); });
  std::printf("%zu entries written\n", results.size());
  return 0;
}
