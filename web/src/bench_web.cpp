// `benchMatmul` for JavaScript (web/package/bench.js): rungs of the matmul ladder measured on the
// page's WebGPU exactly as `surfgrad bench matmul` measures them natively (src/tensor/
// matmul_measure.hpp: checked against float64, then timed), so a browser's figure and the native
// one differ only by the WebGPU under them. In Chromium on a GPU with subgroup matrices (tensor
// cores, `chromium-experimental-subgroup-matrix`) the f16-sgmat rungs run there too.
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "json_options.hpp"
#include "surfgrad/error.hpp"
#include "tensor/matmul_measure.hpp"
#include "web_session.hpp"

using namespace surfgrad;
using surfgrad::web::guarded;
using surfgrad::web::session;

namespace {

using nlohmann::json;

struct Size {
  int64_t m, n, k;
};

std::vector<Size> parse_sizes(const std::string& text) {
  std::vector<Size> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    Size s{};
    char x1 = 0, x2 = 0;
    std::stringstream one(item);
    if (!(one >> s.m >> x1 >> s.n >> x2 >> s.k) || x1 != 'x' || x2 != 'x' || !one.eof() || s.m <= 0 || s.n <= 0 ||
        s.k <= 0)
      throw Error(ErrorKind::Value, "benchMatmul option 'sizes': '" + item + "' is not MxNxK with positive sizes");
    out.push_back(s);
  }
  if (out.empty()) throw Error(ErrorKind::Value, "benchMatmul option 'sizes' lists no size");
  return out;
}

json bench_matmul(const json& o) {
  const std::string what = "benchMatmul option";
  web::refuse_unknown_options(o, {"sizes", "variants", "reps"}, what);
  const std::vector<Size> sizes = parse_sizes(web::option_string(o, "sizes", "1024x1024x1024", what));
  const std::string only = "," + web::option_string(o, "variants", "f16-tuned-tiled,f16-sgmat-direct", what) + ",";
  const int reps = web::option_number(o, "reps", 10, what);
  const std::vector<MatmulVariant> variants = matmul_bench_variants();
  if (reps < 1 || reps > 1000) throw Error(ErrorKind::Value, what + " 'reps' must be in [1, 1000]");
  for (std::stringstream ss(only.substr(1)); ss.good();) {  // every name asked for must exist
    std::string name;
    std::getline(ss, name, ',');
    bool known = name.empty();
    for (const auto& v : variants) known = known || v.name == name;
    if (!known) throw Error(ErrorKind::Value, what + " 'variants': no rung named '" + name + "'");
  }
  gpu::ContextPtr ctx = session().context();
  json rows = json::array();
  for (const Size& s : sizes) {
    Tensor a32 = Tensor::uniform(ctx, {s.m, s.k}, 1, -1, 1), b32 = Tensor::uniform(ctx, {s.k, s.n}, 2, -1, 1);
    Tensor a16, b16;
    if (ctx->features().shader_f16) a16 = a32.cast(DType::f16), b16 = b32.cast(DType::f16);
    for (const auto& v : variants) {
      if (only.find("," + v.name + ",") == std::string::npos) continue;
      const bool f16 = v.name.rfind("f16", 0) == 0;
      json row = {{"size", std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k)},
                  {"variant", v.name}};
      if (f16 && !a16.defined()) {
        row["skipped"] = "no shader-f16";
      } else {
        MatmulProblem p = make_problem(f16 ? a16 : a32, f16 ? b16 : b32);
        MatmulMeasurement m = measure_matmul(v, p, reps);
        if (!m.skipped.empty()) row["skipped"] = m.skipped;
        if (!m.failed.empty()) row["failed"] = m.failed;
        if (m.skipped.empty() && m.failed.empty()) {
          row["valid"] = m.valid;
          row["maxError"] = m.error;
          row["tolerance"] = v.tolerance;
          if (m.valid) row["ms"] = m.ms, row["tflops"] = m.tflops;
        }
      }
      rows.push_back(row);
    }
  }
  const gpu::Features& f = ctx->features();
  json configs = json::array();
  for (const auto& c : f.subgroup_matrix_configs)
    configs.push_back({{"component", c.component}, {"result", c.result}, {"M", c.m}, {"N", c.n}, {"K", c.k}});
  return {{"adapter", ctx->info().name},
          {"subgroupMatrix", f.subgroup_matrix},
          {"subgroupMatrixConfigs", configs},
          {"rows", rows}};
}

}  // namespace

// Measures matmul rungs (options: sizes "MxNxK,...", variants "name,...", reps); 0 and
// {adapter, subgroupMatrix, subgroupMatrixConfigs, rows} in sg_result_json(), or -1.
SG_EXPORT(sg_bench_matmul) int sg_bench_matmul(const char* options_json) {
  return guarded([&] {
    session().result_json = bench_matmul(web::parse_options_object(options_json, "benchMatmul option")).dump();
  });
}
