// `surfgrad bench matmul` (the ladder, validated then timed, beside cuBLAS where PyTorch with
// CUDA is present) and `surfgrad tune` (the autotuner).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cli_options.hpp"
#include "output_files.hpp"
#include "surfgrad/matmul_tuning.hpp"
#include "tensor/matmul_measure.hpp"
#include "tensor/matmul_problem.hpp"
#include "tensor/matmul_subgroup_matrix.hpp"

namespace surfgrad::cli {

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
    int used = 0;
    if (std::sscanf(item.c_str(), "%ldx%ldx%ld%n", &s.M, &s.N, &s.K, &used) != 3 || item.c_str()[used] != 0 ||
        s.M <= 0 || s.N <= 0 || s.K <= 0)
      throw UsageError("--sizes: '" + item + "' is not MxNxK with positive sizes");
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
  std::regex entry(
      R"re("(\d+x\d+x\d+)"\s*:\s*\{\s*"fp32"\s*:\s*([\d.eE+-]+)\s*,\s*"tf32"\s*:\s*([\d.eE+-]+)\s*,\s*"fp16"\s*:\s*([\d.eE+-]+))re");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), entry); it != std::sregex_iterator(); ++it) {
    out[(*it)[1]]["fp32"] = std::stod((*it)[2]);
    out[(*it)[1]]["tf32"] = std::stod((*it)[3]);
    out[(*it)[1]]["fp16"] = std::stod((*it)[4]);
  }
  return out;
}

struct MatmulArgs {
  std::string sizes = "1024x1024x1024,4096x4096x4096,8192x8192x8192,64x4096x4096,4096x4096x64,4096x4096x768";
  std::string variants, json_path, script = std::string(SURFGRAD_SOURCE_DIR) + "/bench/torch_matmul.py";
  int reps = 10;
  std::string sweep;    // "sgmat": every configuration of subgroup_matrix_sweep() at the first size
  int sweep_top = 4;    // then the fastest this many at the later sizes
  std::string command;  // as typed, for the JSON record
};

// --variants: names, and "f16-sgmat:key=value,key=value,..." configurations whose key=value
// items run on after commas (the next item without '=' ends one). The configurations become
// variants of their own; the names are returned as ",name,...," for lookup.
std::string split_variants(const std::string& list, std::vector<MatmulVariant>& configs) {
  std::string names = ",", spec;
  bool in_spec = false;
  auto finish = [&] {
    if (!in_spec) return;
    try {
      configs.push_back(subgroup_matrix_variant(parse_subgroup_matrix_spec(spec)));
    } catch (const Error& e) {
      throw UsageError(std::string("--variants: ") + e.what());
    }
    in_spec = false;
  };
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.rfind("f16-sgmat:", 0) == 0) {
      finish();
      in_spec = true, spec = item.substr(10);
    } else if (in_spec && item.find('=') != std::string::npos) {
      spec += "," + item;
    } else {
      finish();
      names += item + ",";
    }
  }
  finish();
  return names;
}

int bench_matmul(const gpu::ContextPtr& ctx, const MatmulArgs& args) {
  const std::string& sizes_arg = args.sizes;
  std::vector<MatmulVariant> configs;
  std::string only = args.variants.empty() ? "" : split_variants(args.variants, configs);
  if (!args.sweep.empty() && args.sweep != "sgmat") throw UsageError("--sweep: '" + args.sweep + "' (known: sgmat)");
  if (!args.sweep.empty()) {
    if (only.empty()) only = ",";  // the sweep alone, unless --variants names more
    for (const auto& sm : subgroup_matrix_sweep()) configs.push_back(subgroup_matrix_variant(sm));
  }
  if (only == "," && configs.empty()) throw UsageError("--variants: no variant named");
  const std::string& script = args.script;
  const int reps = args.reps;
  std::vector<Size> sizes = parse_sizes(sizes_arg);
  auto ref = cublas(script, sizes);
  std::printf("bench matmul on %s (%s, %s, driver %s), %s\n", ctx->info().name.c_str(), ctx->info().backend.c_str(),
              ctx->info().implementation.c_str(), ctx->info().driver.c_str(), today().c_str());
  std::printf("%s\n", ref.empty()
                          ? "cuBLAS: not measured (no PyTorch with CUDA here)"
                          : "cuBLAS via PyTorch measured in this run: fp32 (TF32 off) for f32 rows, fp16 for f16 rows");
  std::printf("%-15s %-22s %-4s %10s %9s %10s %9s %8s\n", "size", "variant", "rung", "ms", "TFLOP/s", "max err",
              "cuBLAS", "ratio");
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::vector<MatmulVariant> variants = matmul_bench_variants();
  for (auto& c : configs) variants.push_back(c), only += c.name + ",";
  std::map<std::string, double> first_size_tflops;  // the sweep's configurations at the first size
  auto write_json = [&] {
    if (args.json_path.empty()) return;
    nlohmann::ordered_json j = {{"bench", "matmul"},
                                {"command", args.command},
                                {"adapter", ctx->info().name},
                                {"driver", ctx->info().driver},
                                {"implementation", ctx->info().implementation},
                                {"date", today()},
                                {"rows", rows}};
    write_file_atomically(args.json_path, j.dump(2) + "\n", "--json");
  };
  for (size_t si = 0; si < sizes.size(); ++si) {
    const Size& s = sizes[si];
    // Sweep: past the first size only the fastest sweep_top configurations.
    std::string keep;
    if (!args.sweep.empty() && si > 0) {
      std::vector<std::pair<double, std::string>> best;
      for (auto& [name, tf] : first_size_tflops) best.push_back({tf, name});
      std::sort(best.rbegin(), best.rend());
      for (size_t i = 0; i < best.size() && int(i) < args.sweep_top; ++i) keep += "," + best[i].second + ",";
    }
    Tensor a32 = Tensor::uniform(ctx, {s.M, s.K}, 1, -1, 1), b32 = Tensor::uniform(ctx, {s.K, s.N}, 2, -1, 1);
    Tensor a16, b16;
    if (ctx->features().shader_f16) a16 = a32.cast(DType::f16), b16 = b32.cast(DType::f16);
    double flop = 2.0 * double(s.M) * double(s.N) * double(s.K);
    for (const auto& v : variants) {
      if (!only.empty() && only.find("," + v.name + ",") == std::string::npos) continue;
      bool swept = !args.sweep.empty() && v.name.rfind("f16-sgmat:", 0) == 0;
      if (swept && si > 0 && keep.find("," + v.name + ",") == std::string::npos) continue;
      bool f16 = v.name.rfind("f16", 0) == 0;
      std::string why;
      if (f16 && !a16.defined()) why = "no shader-f16";
      MatmulProblem p = make_problem(f16 && a16.defined() ? a16 : a32, f16 && b16.defined() ? b16 : b32);
      if (why.empty()) why = v.unsupported(p);
      if (!why.empty()) {
        std::printf("%-15s %-22s %-4d skipped: %s\n", s.str().c_str(), v.name.c_str(), v.rung, why.c_str());
        continue;
      }
      MatmulMeasurement measured = measure_matmul(v, p, reps);
      if (!measured.failed.empty()) {  // a kernel the implementation refuses ends its own row, not the run
        std::printf("%-15s %-22s %-4d FAILED: %s\n", s.str().c_str(), v.name.c_str(), v.rung, measured.failed.c_str());
        std::fflush(stdout);
        continue;
      }
      const double err = measured.error, ms = measured.ms;
      const bool valid = measured.valid;
      double tf = valid ? flop / (ms * 1e9) : 0;
      double cu = 0;
      if (auto it = ref.find(s.str()); it != ref.end()) cu = it->second[f16 ? "fp16" : "fp32"];
      char line[256];
      if (!valid)
        std::snprintf(line, sizeof line, "%-15s %-22s %-4d REJECTED: error %.2e > %.0e", s.str().c_str(),
                      v.name.c_str(), v.rung, err, v.tolerance);
      else if (cu > 0)
        std::snprintf(line, sizeof line, "%-15s %-22s %-4d %10.3f %9.2f %10.2e %9.1f %7.1f%%", s.str().c_str(),
                      v.name.c_str(), v.rung, ms, tf, err, cu, 100 * tf / cu);
      else
        std::snprintf(line, sizeof line, "%-15s %-22s %-4d %10.3f %9.2f %10.2e %9s %8s", s.str().c_str(),
                      v.name.c_str(), v.rung, ms, tf, err, "-", "-");
      std::printf("%s\n", line);
      std::fflush(stdout);
      rows.push_back({{"size", s.str()},
                      {"variant", v.name},
                      {"rung", v.rung},
                      {"valid", valid},
                      {"ms", ms},
                      {"tflops", tf},
                      {"max_error", err},
                      {"cublas_tflops", cu}});
      if (swept && si == 0 && valid) first_size_tflops[v.name] = tf;
      write_json();  // after every row: a sweep cut off by its time limit keeps what it measured
    }
  }
  if (!args.sweep.empty() && !first_size_tflops.empty()) {
    std::vector<std::pair<double, std::string>> best;
    for (auto& [name, tf] : first_size_tflops) best.push_back({tf, name});
    std::sort(best.rbegin(), best.rend());
    std::printf("sweep at %s, fastest first:\n", sizes[0].str().c_str());
    for (size_t i = 0; i < best.size() && i < 10; ++i)
      std::printf("  %8.2f TFLOP/s  %s\n", best[i].first, best[i].second.c_str());
  }
  write_json();
  return 0;
}

struct TuneArgs {
  std::string sizes, candidates;
  bool f32_only = false, verbose = false;
};

// BMxBNxBK:TMxTN[:db], comma-separated: tiles to try instead of the built-in space.
std::vector<TiledParams> parse_candidates(const std::string& list) {
  std::vector<TiledParams> out;
  std::stringstream ss(list);
  std::string c;
  while (std::getline(ss, c, ',')) {
    TiledParams p;
    char db[8] = {0};
    int used = 0;
    if (std::sscanf(c.c_str(), "%dx%dx%d:%dx%d%n", &p.bm, &p.bn, &p.bk, &p.tm, &p.tn, &used) < 5 ||
        (c.c_str()[used] != 0 && std::sscanf(c.c_str() + used, ":%7s", db) != 1) || p.bm <= 0 || p.bn <= 0 ||
        p.bk <= 0 || p.tm <= 0 || p.tn <= 0 || (db[0] && std::string(db) != "db"))
      throw UsageError("tune --candidates: '" + c + "' is not BMxBNxBK:TMxTN[:db] with positive sizes");
    p.double_buffer = std::string(db) == "db";
    out.push_back(p);
  }
  return out;
}

int tune(const gpu::ContextPtr& ctx, const TuneArgs& args) {
  TuneOptions opt;
  if (!args.sizes.empty()) {
    opt.shapes.clear();
    for (auto& s : parse_sizes(args.sizes)) opt.shapes.emplace_back(s.M, s.N, s.K);
  }
  if (args.f32_only) opt.dtypes = {DType::f32};
  opt.verbose = args.verbose;
  if (!args.candidates.empty()) opt.candidates = parse_candidates(args.candidates), opt.verbose = true;
  std::printf("tuning matmul on %s; cache: %s\n", ctx->info().name.c_str(), tuning_cache_path().c_str());
  auto results = tune_matmul(ctx, opt, [](const std::string& line) {
    std::printf("  %s\n", line.c_str());
    std::fflush(stdout);
  });
  std::printf("%zu entries written\n", results.size());
  return 0;
}

}  // namespace

void add_bench_matmul_command(CLI::App& bench, CommandFn& chosen) {
  auto a = std::make_shared<MatmulArgs>();
  CLI::App* m = bench.add_subcommand("matmul", "the matmul kernel ladder, validated then timed, beside cuBLAS");
  m->add_option("--sizes", a->sizes, "MxNxK,... problem sizes")->capture_default_str();
  m->add_option("--variants", a->variants, "only these variants (comma-separated names)");
  m->add_option("--json", a->json_path, "also write the results to this JSON file (- for standard output)");
  m->add_option("--torch-script", a->script, "the PyTorch reference script")->capture_default_str();
  m->add_option("--sweep", a->sweep,
                "sgmat: time the subgroup-matrix grid at the first size, its fastest --sweep-top at the others");
  m->add_option("--sweep-top", a->sweep_top, "configurations of the sweep kept past the first size")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  m->add_option("--reps", a->reps, "timed repetitions (median)")->check(integer_in(1, 10000))->capture_default_str();
  m->callback([a, m, &chosen] {
    a->command = "surfgrad bench matmul";
    for (const auto& o : m->get_options())
      if (o->count() > 0 && !o->get_lnames().empty())
        a->command += " --" + o->get_lnames()[0] + " " + o->as<std::string>();
    chosen = [a](const gpu::ContextPtr& ctx) { return bench_matmul(ctx, *a); };
  });
}

void add_tune_command(CLI::App& app, CommandFn& chosen) {
  auto a = std::make_shared<TuneArgs>();
  CLI::App* t = app.add_subcommand("tune", "autotune matmul tiles for this adapter (cached per adapter)");
  t->add_option("--sizes", a->sizes, "MxNxK,... problem sizes (default: the tuner's own set)");
  t->add_flag("--f32-only", a->f32_only, "tune f32 only (not f16)");
  t->add_flag("--verbose", a->verbose, "print every candidate");
  t->add_option("--candidates", a->candidates, "BMxBNxBK:TMxTN[:db],... tiles to try instead of the built-in space");
  t->callback([a, &chosen] { chosen = [a](const gpu::ContextPtr& ctx) { return tune(ctx, *a); }; });
}

}  // namespace surfgrad::cli
