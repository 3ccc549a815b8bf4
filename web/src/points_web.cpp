// Points held on the GPU between calls: JavaScript streams a data set into GPU row blocks through
// a small reused staging area (sg_points_begin, sg_points_write, ...), or has the built-in clusters
// generated there (sg_points_builtin), then maps them (sg_map_held). The points are never whole
// in the wasm heap (wasm32: 4 GiB at most; a million 768-D points are 3 GiB).
//
// One set is held at a time (the module runs one call at a time; surfgrad.js queues them).
// Errors go through guarded(), as in surfgrad_web.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tensor_access.hpp"
#include "map_web.hpp"
#include "surfgrad/error.hpp"
#include "surfgrad/io.hpp"
#include "surfgrad/point_blocks.hpp"
#include "web_session.hpp"

namespace surfgrad::web {
namespace {

struct HeldPoints {
  PointBlocks points;
  int64_t n = 0, d = 0;
  int64_t written = 0;     // rows uploaded so far
  int64_t block_rows = 0;  // rows per GPU block
  bool active = false;
};

HeldPoints& held() {
  static HeldPoints h;
  return h;
}

void release() { held() = HeldPoints{}; }

std::string rows_text(int64_t n) { return std::to_string(n) + (n == 1 ? " row" : " rows"); }

// Rows per GPU block: as PointBlocks::from_host sizes them (a quarter of the binding limit), so
// that streamed points give the same tensors, and the same map bit for bit, as points handed
// over whole. `max_rows` > 0 caps it (the browser suite uses it to cross block boundaries with
// small data).
int64_t gpu_block_rows(const gpu::ContextPtr& ctx, int64_t d, int64_t max_rows) {
  uint64_t block_bytes = ctx->limits().max_storage_buffer_binding_size / 4;
  if (uint64_t(d) * 4 > block_bytes)
    throw Error(ErrorKind::LimitExceeded, "points: one row of " + std::to_string(d) + " floats (" +
                                              std::to_string(uint64_t(d) * 4) + " bytes) is over a quarter of this " +
                                              "adapter's binding limit (" +
                                              std::to_string(ctx->limits().max_storage_buffer_binding_size) +
                                              " bytes); reduce the dimensions before mapping");
  int64_t rows = std::max<int64_t>(1, int64_t(block_bytes / (uint64_t(d) * 4)));
  return max_rows > 0 ? std::min(rows, max_rows) : rows;
}

// "row 12345, column 7 is NaN" for the first non-finite value of `count` rows starting at row `first`.
void check_finite(const float* rows, int64_t count, int64_t d, int64_t first) {
  for (int64_t i = 0; i < count * d; ++i) {
    float v = rows[i];
    if (std::isfinite(v)) continue;
    std::string what = std::isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf";
    throw Error(ErrorKind::Value, "points: row " + std::to_string(first + i / d) + ", column " + std::to_string(i % d) +
                                      " is " + what + "; every value must be finite (drop or fill that row)");
  }
}

}  // namespace
}  // namespace surfgrad::web

using namespace surfgrad;
using surfgrad::web::guarded;
using surfgrad::web::held;
using surfgrad::web::session;

// Starts a held set of n points of d floats (releasing any earlier one). Checks n, d > 0 and
// that one row fits a GPU block; the map's own fit (check_map_fits) needs its options and is
// checked by sg_map_check before the upload and by sg_map_held. `max_block_rows` > 0 caps the
// rows per GPU block (tests); 0: the adapter's binding limit decides. Returns 0, or -1.
SG_EXPORT(sg_points_begin) int sg_points_begin(int32_t n, int32_t d, int32_t max_block_rows) {
  return guarded([&] {
    web::release();
    if (n <= 0 || d <= 0)
      throw Error(ErrorKind::Shape,
                  "points: n × d with n, d > 0, not " + std::to_string(n) + " × " + std::to_string(d));
    web::HeldPoints& h = held();
    h.block_rows = web::gpu_block_rows(session().context(), d, max_block_rows);
    h.n = n, h.d = d, h.active = true;
  });
}

// Appends `count` whole rows (row-major floats at `rows`) to the held points: each run is
// uploaded into its GPU block at its row offset (queue.writeBuffer copies it at once: `rows` may
// be reused on return). Refuses rows past n and non-finite values, naming the row and column.
SG_EXPORT(sg_points_write) int sg_points_write(const float* rows, int32_t count) {
  return guarded([&] {
    web::HeldPoints& h = held();
    if (!h.active) throw Error(ErrorKind::Value, "points: no points begun (call sg_points_begin first)");
    if (count <= 0) throw Error(ErrorKind::Value, "points: a block of " + std::to_string(count) + " rows");
    if (h.written + count > h.n)
      throw Error(ErrorKind::Shape, "points: " + web::rows_text(h.written + count) + " given, more than the " +
                                        std::to_string(h.n) +
                                        " declared (n); a source's blocks must hold n rows in all");
    web::check_finite(rows, count, h.d, h.written);
    const gpu::ContextPtr& ctx = session().context();
    for (int64_t done = 0; done < count;) {
      int64_t row = h.written + done, in_block = row % h.block_rows;
      if (in_block == 0) h.points.blocks.push_back(Tensor::empty(ctx, {std::min(h.block_rows, h.n - row), h.d}));
      const Tensor& block = h.points.blocks.back();
      int64_t take = std::min<int64_t>(count - done, block.shape(0) - in_block);
      ctx->upload(*TensorAccess::buffer(block), rows + done * h.d, uint64_t(take * h.d) * 4,
                  uint64_t(in_block * h.d) * 4);
      done += take;
    }
    h.written += count;
  });
}

// The held points become the built-in clusters of `surfgrad map` with no input (n × 768,
// generated on the GPU: builtin_point_blocks); their labels (n int32) are written to `labels`.
SG_EXPORT(sg_points_builtin) int sg_points_builtin(int32_t n, int32_t* labels) {
  return guarded([&] {
    web::release();
    Tensor label_tensor;
    PointBlocks points = builtin_point_blocks(session().context(), n, label_tensor);
    label_tensor.to_host(labels);
    web::HeldPoints& h = held();
    h.points = std::move(points);
    h.n = h.written = n, h.d = 768, h.active = true;
  });
}

// Checks a map's options against a job of n × d points (validate and check_map_fits): what
// JavaScript calls before streaming, so that a bad option fails before the upload. builtin != 0:
// the points will be sg_points_builtin's, whose kernels are then started compiling first.
SG_EXPORT(sg_map_check)
int sg_map_check(const char* method, const char* options_json, int32_t n, int32_t d, int32_t builtin) {
  return guarded([&] {
    if (builtin && n > 0) web::prewarm_builtin_points(session().context(), n);
    web::prepare_map(method, options_json, n, d);
  });
}

// Maps the held points as sg_map maps its argument (the same result JSON), once all n rows are
// written; the points are released as map_points releases them (a failed check keeps them).
SG_EXPORT(sg_map_held)
int sg_map_held(const char* method, const char* options_json, float* out, int32_t progress_every) {
  return guarded([&] {
    web::HeldPoints& h = held();
    if (!h.active)
      throw Error(ErrorKind::Value, "map: no points held (begin and write them, or take the built-in set)");
    if (h.written < h.n)
      throw Error(ErrorKind::Shape, "map: " + std::to_string(h.written) + " of " + web::rows_text(h.n) +
                                        " written; a source's blocks must hold n rows in all");
    MapOptions options = web::prepare_map(method, options_json, h.n, h.d);
    PointBlocks points = std::move(h.points);
    web::release();
    web::run_map(std::move(points), options, out, progress_every);
  });
}

// Releases the held points (their GPU buffers return to the pool). Always returns 0.
SG_EXPORT(sg_points_release) int sg_points_release() {
  return guarded([] { web::release(); });
}
