// Tile skipping for the exact kNN on sorted points (knn_prune.hpp): the bounds, and the WGSL the
// streaming kernel takes for it.
#include "maps/knn_prune.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "platform/host_resources.hpp"

namespace surfgrad {

namespace {
// The latest sums, process-wide (a thread_local with a destructor needs __cxa_thread_atexit,
// which the WebAssembly build's libc lacks), on the host: a GPU buffer kept in a static outlived
// the device at exit and crashed NVIDIA's driver there (every sorted map on the H200 ended in a
// segmentation fault after writing its outputs).
platform::Mutex last_mutex;
KnnPruneStats last_stats;
std::atomic<bool> recording{false};
}  // namespace

int knn_prune_group_tiles(int fallback) {
  const char* env = std::getenv("SURFGRAD_KNN_PRUNE_GROUP");
  if (!env || !*env) return fallback;
  char* end = nullptr;
  const long v = std::strtol(env, &end, 10);
  if (*end != 0 || v < 1 || v > 64)
    throw Error(ErrorKind::Value, "SURFGRAD_KNN_PRUNE_GROUP='" + std::string(env) +
                                      "': use the tiles a group of the exact kNN's skip test covers, 1 to 64 (unset: " +
                                      std::to_string(fallback) + ")");
  return int(v);
}

KnnPrune knn_prune_bounds(const Tensor& x, int64_t tile_rows, int64_t block_rows, int group_tiles) {
  if (x.rank() != 2 || x.dtype() != DType::f32 || tile_rows < 1 || block_rows < 1 || group_tiles < 1)
    throw Error(ErrorKind::Shape,
                "knn (tile bounds): points must be f32 [N, D] with groups of at least one row, got " + x.describe());
  auto ctx = x.context();
  KnnPrune p;
  p.group_tiles = group_tiles;
  const int64_t n = x.shape(0), d = x.shape(1), group_rows = tile_rows * p.group_tiles;
  p.dims = d;
  p.groups = (n + group_rows - 1) / group_rows;
  p.blocks = (n + block_rows - 1) / block_rows;
  p.words = Tensor::zeros(ctx, {p.stats_offset() + p.blocks}, DType::u32);  // f32 bits; the counts start at 0
  auto bounds = kernels::Program::file(ctx, "knn_prune_bounds.wgsl");
  bounds.launch({p.words, x}, {n, d, group_rows, p.groups, int64_t(0)},
                kernels::groups_for(*ctx, uint64_t(p.groups), 1));
  bounds.launch({p.words, x}, {n, d, block_rows, p.blocks, p.block_offset()},
                kernels::groups_for(*ctx, uint64_t(p.blocks), 1));
  return p;
}

bool knn_prune_enabled(const gpu::Context& ctx) {
  const char* env = std::getenv("SURFGRAD_KNN_PRUNE");
  bool on = true;
  if (env && *env && std::strcmp(env, "1") != 0) {
    if (std::strcmp(env, "0") != 0)
      throw Error(ErrorKind::Value, "SURFGRAD_KNN_PRUNE='" + std::string(env) +
                                        "': use 1 (the exact kNN on sorted points skips tiles no row can use; the "
                                        "default where the adapter has subgroups) or 0 (it streams every tile)");
    on = false;
  }
  return on && ctx.features().subgroups;
}

KnnPruneCounts knn_prune_counts(const KnnPrune& p, int64_t tiles) {
  KnnPruneCounts c;
  c.counts = p.words.slice(0, p.stats_offset(), p.stats_offset() + p.blocks).clone();
  c.tiles = tiles;
  c.abandoned = p.abandoned;
  return c;
}

KnnPruneStats KnnPruneCounts::read() const {
  KnnPruneStats s;
  if (!counts.defined()) return s;
  for (uint32_t c : counts.to_vector<uint32_t>()) s.skipped += c;
  s.pairs = counts.shape(0) * tiles;
  s.abandoned = abandoned;
  return s;
}

void knn_prune_record_stats(bool on) { recording = on; }
KnnPruneStats knn_prune_last_stats() {
  platform::LockGuard<platform::Mutex> lock(last_mutex);
  return last_stats;
}
void knn_prune_set_last(const KnnPruneCounts& c) {
  if (!recording) return;
  const KnnPruneStats s = c.read();  // (outside the lock: a readback)
  platform::LockGuard<platform::Mutex> lock(last_mutex);
  last_stats = s;
}

namespace {

std::string binding_wgsl(int binding, const std::string& row_bar, int group_tiles) {
  return "@group(0) @binding(" + std::to_string(binding) +
         ") var<storage, read_write> prune: array<u32>;  // knn_prune.hpp: bounds, then counts\n"
         "const PRUNE_GT: u32 = " +
         std::to_string(group_tiles) +
         "u;  // tiles a group\n"
         "fn prune_f(i: u32) -> f32 { return bitcast<f32>(prune[i]); }\n"
         "// Row thread lid's bar as a distance (row my_row), as the bits of a non-negative float.\n"
         "fn prune_row_bar(lid: u32, my_row: u32) -> u32 { return bitcast<u32>(max(" +
         row_bar + ", 0.0)); }\n";
}

// The bars' two slots (merge_count[1], [2]) start at 0; after a workgroup barrier (the lists'
// storageBarrier does not order workgroup memory) the rows put the bars they start with (MAXF +
// |x_i|² while a list is not full: nothing skipped) in the slot the first test reads, and a second
// barrier has them all there before thread 0 reads it (without it thread 0 could see only its own
// subgroup's rows: a review caught it). Twice a dispatch.
const char* init_wgsl = R"(  if (lid == 0u) { atomicStore(&merge_count[1], 0u); atomicStore(&merge_count[2], 0u); }
  var skipped = 0u;  // (thread 0's count)
  var prune_group = 0xffffffffu;  // the group of tiles last tested
  var prune_tests = 0u;
)";
const char* start_wgsl = R"(  workgroupBarrier();
  if (owns_row) { atomicMax(&merge_count[2], prune_row_bar(lid, my_row)); }
  workgroupBarrier();
)";

// At the head of tile t, whose chunk (t, 0) the prefetch registers hold, when the stream enters a
// new group of tiles. Row threads put their bars in one slot (an atomic max of non-negative
// floats' bits); every subgroup sums the centres' squared distance, its lanes over the dimensions;
// thread 0 tests the group against the other slot, the bars as of the previous test (or the
// dispatch's start: no lower than now, so a stale bar skips less, never wrongly), and clears that
// slot for the next test; the workgroup-uniform load orders it all (and is the test's only
// barrier: with a second one, the f32 kernel took 12% longer where nothing was skipped). The bound is made conservative
// for f32 rounding: the distance and radii by a relative (D + 8)·2^-22 (sums of D squares), the
// keys by that times 4·(|x_i| + |x_j|)² (theirs and the norms'). A skip goes to the group's end (or
// the wrap of the tiles) and never past the dispatch's last tile (whose merge ends the lists), and
// runs the merge of any merge tile it passes; a block whose rows straddle two of the bounds' blocks
// is never skipped.
std::string tile_wgsl(const std::string& load) {
  return R"(    {
      let tidx = (t + rot) % tiles;
      let grp = tidx / PRUNE_GT;
      if (grp != prune_group) {
        prune_group = grp;
        let pd = arg(10u);
        let gb = grp * (pd + 2u);
        let qb = arg(12u) + (row0 / BM) * (pd + 2u);
        if (owns_row) { atomicMax(&merge_count[1u + (prune_tests & 1u)], prune_row_bar(lid, my_row)); }
        var s = 0.0;
        for (var d = prune_lane; d < pd; d += prune_sg) { let e = prune_f(qb + d) - prune_f(gb + d); s = fma(e, e, s); }
        s = subgroupAdd(s);  // (thread 0 reads its own subgroup's sum; the bars it reads are ordered by the
                             // previous test's uniform load: no barrier here)
        if (lid == 0u) {
          let rel = f32(pd + 8u) * 0x1p-22f;
          let lb = max(sqrt(s) * (1.0 - rel) - (prune_f(qb + pd) + prune_f(gb + pd)) * (1.0 + rel), 0.0);
          let m = sqrt(prune_f(qb + pd + 1u)) + sqrt(prune_f(gb + pd + 1u));
          let lb2 = (lb * lb - 4.0 * rel * m * m) * arg_f32(11u) * (1.0 - 0x1p-20f);
          let bar = bitcast<f32>(atomicLoad(&merge_count[2u - (prune_tests & 1u)]));
          merge_total[1] = select(0u, 1u, lb2 > bar && t + 1u < tile_end && row0 % BM == 0u);
          atomicStore(&merge_count[2u - (prune_tests & 1u)], 0u);
        }
        prune_tests += 1u;
        if (workgroupUniformLoad(&merge_total[1]) != 0u) {
          let next = min(t + min((grp + 1u) * PRUNE_GT, tiles) - tidx, tile_end - 1u);
          if (lid == 0u) { skipped += next - t; }
          // A merge tile among the skipped ones (t % MERGE_EVERY == MERGE_EVERY - 1): its merge, as
          // the stream would have run it, so that when rows merge, and so their bars after, do not
          // depend on the skips (the subgroup-matrix kernel's candidate lists would: a review).
          if (next / MERGE_EVERY > t / MERGE_EVERY) {
            if (lid == 0u) { merge_total[0] = atomicExchange(&merge_count[0], 0u); }
            merge_rows(lid, row0, arg(4u), K, workgroupUniformLoad(&merge_total[0]));
          }
          t = next - 1u;
          lt = next;
          lk = 0u;
          {
)" + load +
         R"(          }
          continue;
        }
      }
    }
)";
}

const char* end_wgsl =
    "  if (lid == 0u && skipped != 0u) { let at = arg(13u) + row0 / BM; prune[at] = prune[at] + skipped; }\n";

}  // namespace

void knn_prune_values(kernels::Values& v, int binding, const std::string& row_bar, int group_tiles) {
  v["PRUNE_BINDING"] = binding_wgsl(binding, row_bar, group_tiles);
  v["PRUNE_INIT"] = init_wgsl;
  v["PRUNE_START"] = start_wgsl;
  v["PRUNE_TILE"] = tile_wgsl(v.at("LOAD"));
  v["PRUNE_END"] = end_wgsl;
  v["MAIN_BUILTINS"] = v.at("MAIN_BUILTINS") +
                       ", @builtin(subgroup_invocation_id) prune_lane: u32, @builtin(subgroup_size) prune_sg: u32";
}

void knn_prune_values_off(kernels::Values& v) {
  for (const char* key : {"PRUNE_BINDING", "PRUNE_INIT", "PRUNE_START", "PRUNE_TILE", "PRUNE_END"}) v[key] = "";
}

}  // namespace surfgrad
