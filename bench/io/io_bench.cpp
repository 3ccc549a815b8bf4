// Host-side timings of the map's file input and output, without a map: reading a table's points
// (no GPU upload: the sink only sums the rows), and writing a random n × 2 map as the default
// .npy + CSV + PNG, as Parquet, or as tiles. For measuring the I/O phases on a machine whose GPU
// (lavapipe here) could not map the same points in reasonable time.
//   surfgrad_io_bench read FILE [COLUMN]
//   surfgrad_io_bench write N OUT           OUT.npy, OUT.csv, OUT.png (labels 0-9)
//   surfgrad_io_bench parquet N OUT.parquet
//   surfgrad_io_bench tiles N DIR
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "io/table_io.hpp"
#include "surfgrad/gpu.hpp"
#include "surfgrad/io.hpp"
#include "surfgrad/tensor.hpp"

using namespace surfgrad;

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A map-like layout: 10 Gaussian clusters in 2-D, labels by cluster.
void random_map(int64_t n, std::vector<float>& xy, std::vector<int32_t>& labels) {
  std::mt19937 rng(1);
  std::normal_distribution<float> g(0.f, 1.f);
  xy.resize(size_t(2 * n));
  labels.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    int c = int(i % 10);
    labels[size_t(i)] = c;
    xy[size_t(2 * i)] = 8.f * float(c % 4) + g(rng);
    xy[size_t(2 * i + 1)] = 8.f * float(c / 4) + g(rng);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s read FILE [COLUMN] | write N OUT | parquet N OUT.parquet | tiles N DIR\n", argv[0]);
    return 2;
  }
  std::string what = argv[1];
  try {
    if (what == "read") {
      std::vector<std::string> cols;
      if (argc > 3) cols.push_back(argv[3]);
      auto t0 = std::chrono::steady_clock::now();
      int64_t dims = 0;
      double sum = 0;
      int64_t rows = io::read_table_points(argv[2], cols, int64_t(1) << 30, dims,
                                           [&](const float* r, int64_t, int64_t n, int64_t d, int64_t) {
                                             sum += double(r[0]) + double(r[(n * d) - 1]);
                                           });
      std::printf("read %lld x %lld in %.3f s (checksum %.3f)\n", (long long)rows, (long long)dims, since(t0), sum);
      return 0;
    }
    if (argc < 4) return 2;
    int64_t n = std::atoll(argv[2]);
    std::string out = argv[3];
    std::vector<float> xy;
    std::vector<int32_t> labels;
    random_map(n, xy, labels);
    if (what == "parquet") {
      auto t0 = std::chrono::steady_clock::now();
      io::write_map_parquet(out, xy.data(), n, "", {});
      std::printf("parquet: %lld points in %.3f s\n", (long long)n, since(t0));
      return 0;
    }
    if (what == "tiles") {
      auto t0 = std::chrono::steady_clock::now();
      int64_t tiles = io::write_map_tiles(out, xy.data(), n, labels.data(), true);
      std::printf("tiles: %lld points in %lld tiles in %.3f s\n", (long long)n, (long long)tiles, since(t0));
      return 0;
    }
    if (what == "write") {
      auto ctx = gpu::Context::create();
      Tensor y = Tensor::from_host(ctx, xy.data(), {n, 2}, DType::f32);
      Tensor lab = Tensor::from_host(ctx, labels.data(), {n}, DType::i32);
      ctx->sync();
      auto t0 = std::chrono::steady_clock::now();
      write_outputs(out, y, lab);
      std::printf("npy + csv + png: %lld points in %.3f s\n", (long long)n, since(t0));
      return 0;
    }
    std::fprintf(stderr, "unknown: %s\n", what.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
