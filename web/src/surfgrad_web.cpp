// The WebAssembly module's C interface: what web/package/surfgrad.js calls. Thin, like the
// Python binding: the map pipeline is the library's map_points(); this file turns JavaScript's
// arguments into its options and its results and errors back into plain memory and JSON.
//
// Errors: every export catches surfgrad::Error (and std::exception) and returns -1 (or 0 for a
// pointer), keeping the kind and message for sg_error_kind()/sg_error_message(); surfgrad.js
// throws them as a SurfgradError. Nothing aborts on bad input.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "io/host_formats.hpp"
#include "json_options.hpp"
#include "map_web.hpp"
#include "surfgrad/error.hpp"
#include "surfgrad/gpu.hpp"
#include "surfgrad/map_pipeline.hpp"
#include "surfgrad/tensor.hpp"
#include "web_session.hpp"

// Implemented in JavaScript (surfgrad.js): one progress event of a running map. `embedding` is
// 0 or the address of n×2 floats, valid during the call. Returns nonzero to cancel.
extern "C" __attribute__((import_module("surfgrad"), import_name("map_progress"))) int sg_js_map_progress(
    const char* phase, int32_t phase_length, double done, double total, const float* embedding, int32_t n);

namespace surfgrad::web {

Session& session() {
  static Session s;
  return s;
}

gpu::ContextPtr Session::context() {
  if (!ctx || ctx->device_lost()) {
    gpu::ContextOptions options;
    options.quiet = true;
    ctx = gpu::Context::create(options);
  }
  return ctx;
}

void Session::fail(int kind, const std::string& message) {
  error_kind = kind;
  error_message = message;
}

namespace {

// The options object surfgrad.js passes (the schema's JavaScript names, camelCase) → MapOptions.
// Unknown keys are refused with the method's list; numbers and words are checked by the schema.
MapOptions parse_options(const std::string& method, const std::string& text) {
  const std::string what = "map option";
  nlohmann::json o = parse_options_object(text.c_str(), what);
  MapOptions m;
  m.method = parse_map_method(method, "map");
  for (auto& [key, value] : o.items()) {
    if (value.is_null()) continue;
    const MapOptionSpec* spec = find_map_option(key, m.method, &MapOptionSpec::js);
    if (!spec || key == "method") {
      std::string list;
      for (const MapOptionSpec& s : map_option_schema())
        if (map_option_applies(s, m.method) && std::string_view(s.js) != "method")
          list += std::string(list.empty() ? "" : ", ") + s.js;
      throw Error(ErrorKind::Value, "unknown " + what + " '" + key + "' for " + method + " (options: " + list + ")");
    }
    const std::string named = what + " '" + key + "'";
    if (value.is_number())
      set_map_option(m, *spec, value.get<double>(), named);
    else if (value.is_string())
      set_map_option(m, *spec, value.get<std::string>(), named);
    else
      throw Error(ErrorKind::Value, named + " must be " + map_option_range(*spec) + ", not " + value.dump());
  }
  return m;
}

}  // namespace

MapOptions prepare_map(const char* method, const char* options_json, int64_t n, int64_t d) {
  if (n <= 0 || d <= 0)
    throw Error(ErrorKind::Shape,
                "map: points must be n × d with n, d > 0, not " + std::to_string(n) + " × " + std::to_string(d));
  MapOptions options = parse_options(method, options_json);
  validate(options, n, d);  // the same messages as the CLI and Python
  check_map_fits(session().context(), options, n, d);
  // The kernels compile on the GPU process's workers while the points are read and uploaded.
  prewarm_map(session().context(), options, n, d);
  return options;
}

void run_map(PointBlocks points, const MapOptions& options, float* out, int32_t progress_every) {
  const int64_t n = points.rows();
  std::vector<float> layout;
  int64_t last_drawn = -1;
  MapResult r = map_points(std::move(points), options, [&](const MapProgressEvent& e) {
    const float* drawn = nullptr;
    bool last = e.done == e.total;
    if (e.embedding && progress_every > 0 && (e.done - last_drawn >= progress_every || last)) {
      layout.resize(size_t(e.embedding->numel()));
      e.embedding->to_host(layout.data());
      drawn = layout.data();
      last_drawn = e.done;
    }
    int stop = sg_js_map_progress(e.phase.data(), int32_t(e.phase.size()), double(e.done), double(e.total), drawn,
                                  drawn ? int32_t(n) : 0);
    return stop == 0;
  });
  r.embedding.to_host(out);
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& p : r.phases) phases.push_back({{"name", p.name}, {"seconds", p.seconds}});
  nlohmann::json j = {{"phases", phases},
                      {"k", r.k},
                      {"pcaComponents", r.pca_components},
                      {"approximateKnn", r.approximate_knn},
                      {"knnRecall", r.knn_recall},
                      {"gpuPeakBytes", double(r.gpu_peak_bytes)},
                      {"hostPeakBytes", double(r.host_peak_bytes)}};
  session().result_json = j.dump();
}

}  // namespace surfgrad::web

using namespace surfgrad;
using surfgrad::web::guarded;
using surfgrad::web::session;

SG_EXPORT(sg_alloc) void* sg_alloc(size_t bytes) { return std::malloc(bytes ? bytes : 1); }
SG_EXPORT(sg_free) void sg_free(void* p) { std::free(p); }

SG_EXPORT(sg_error_kind) int sg_error_kind() { return session().error_kind; }
SG_EXPORT(sg_error_message) const char* sg_error_message() { return session().error_message.c_str(); }
SG_EXPORT(sg_result_json) const char* sg_result_json() { return session().result_json.c_str(); }

// Creates the device (the adapter the page asked for; the bridge holds it) and returns 0, or -1.
// sg_result_json() then holds the adapter, features and limits.
SG_EXPORT(sg_init) int sg_init() {
  return guarded([] {
    gpu::ContextPtr ctx = session().context();
    const gpu::AdapterInfo& i = ctx->info();
    const gpu::Features& f = ctx->features();
    const gpu::Limits& l = ctx->limits();
    nlohmann::json j = {{"adapter", i.name},
                        {"vendor", i.vendor},
                        {"architecture", i.architecture},
                        {"description", i.description},
                        {"backend", i.backend},
                        {"adapterType", i.adapter_type},
                        {"features", f.device_features},
                        {"shaderF16", f.shader_f16},
                        {"subgroups", f.subgroups},
                        {"subgroupMinSize", f.subgroup_min_size},
                        {"subgroupMaxSize", f.subgroup_max_size},
                        {"timestampQuery", f.timestamp_query},
                        {"limits",
                         {{"maxBufferSize", double(l.max_buffer_size)},
                          {"maxStorageBufferBindingSize", double(l.max_storage_buffer_binding_size)},
                          {"maxStorageBuffersPerShaderStage", l.max_storage_buffers_per_shader_stage},
                          {"maxComputeWorkgroupsPerDimension", l.max_compute_workgroups_per_dimension},
                          {"maxComputeInvocationsPerWorkgroup", l.max_compute_invocations_per_workgroup},
                          {"maxComputeWorkgroupStorageSize", l.max_compute_workgroup_storage_size}}}};
    session().result_json = j.dump();
  });
}

// The map options' schema (surfgrad/map_options.hpp) as JSON in sg_result_json(): maps.js takes
// its option names from it, the page its ranges and defaults. Returns 0.
SG_EXPORT(sg_map_option_schema) int sg_map_option_schema() {
  return guarded([] { session().result_json = map_option_schema_json(); });
}

// A t-SNE or UMAP map of n points of d floats at `points`, written to `out` (n×2 floats).
// `method` and `options_json` are NUL-terminated. Progress events go to JavaScript every
// `progress_every` optimisation steps with the current layout (0: without layouts).
// sg_result_json() then holds the phases, k, PCA components and recall. (Points streamed in
// blocks, never whole in the wasm heap, take points_web.cpp's sg_points_* and sg_map_held.)
SG_EXPORT(sg_map)
int sg_map(const char* method, const char* options_json, const float* points, int32_t n, int32_t d, float* out,
           int32_t progress_every) {
  return guarded([&] {
    MapOptions options = web::prepare_map(method, options_json, n, d);  // before any upload
    web::run_map(PointBlocks::from_host(session().context(), points, n, d), options, out, progress_every);
  });
}

// A .npy file's bytes → a malloc'd float32 copy of its values (caller frees with sg_free) and
// its shape and dtype in sg_result_json(). Any numeric dtype the library reads; the file is
// checked by the library's hardened decoder (sizes, header, truncation).
SG_EXPORT(sg_decode_npy) float* sg_decode_npy(const char* bytes, size_t length) {
  float* values = nullptr;
  int rc = guarded([&] {
    std::istringstream in(std::string(bytes, length));
    io::NpyArray a = io::decode_npy_host(in, "the .npy file");
    int64_t count = 1;
    for (int64_t s : a.shape) count *= s;
    values = static_cast<float*>(std::malloc(size_t(std::max<int64_t>(count, 1)) * sizeof(float)));
    if (!values) throw Error(ErrorKind::OutOfMemory, ".npy: no memory for " + std::to_string(count) + " values");
    const char* data = a.data.data();
    for (int64_t i = 0; i < count; ++i) {
      switch (a.dtype) {
        case DType::f32: {
          float v;
          std::memcpy(&v, data + 4 * i, 4);
          values[i] = v;
          break;
        }
        case DType::i32: {
          int32_t v;
          std::memcpy(&v, data + 4 * i, 4);
          values[i] = float(v);
          break;
        }
        case DType::u32: {
          uint32_t v;
          std::memcpy(&v, data + 4 * i, 4);
          values[i] = float(v);
          break;
        }
        default:
          std::free(values);
          values = nullptr;
          throw Error(ErrorKind::DType,
                      ".npy: dtype " + a.descr + " cannot be read in the browser; save it as float32");
      }
    }
    session().result_json = nlohmann::json({{"shape", a.shape}, {"dtype", a.descr}}).dump();
  });
  return rc == 0 ? values : nullptr;
}
