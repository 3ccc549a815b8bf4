// The surfgrad command-line tool.
//   surfgrad info                 adapter, implementation, features, limits
//   surfgrad demo [moons]         train an MLP on two moons, write the decision boundary PNG
//   surfgrad demo mnist --data D  train an MLP on MNIST IDX files, report held-out accuracy
//   surfgrad demo tensors         a short tour of GPU tensor ops, checked on the host
//   surfgrad bench elementwise    64M-element add vs device copy bandwidth
//   surfgrad bench dispatch       µs per op for a batch of 1,000 small ops
#include <cstdio>
#include <cstring>
#include <string>

#include "cli.hpp"
#include "surfgrad/gpu.hpp"

using namespace surfgrad;

static void usage() {
  std::puts(
      "usage: surfgrad <command> [options]\n"
      "  info                        adapter, WebGPU implementation, features and limits\n"
      "  demo [moons] [--steps N] [--out moons.png]   MLP on two moons (the default job)\n"
      "  demo mnist --data DIR [--epochs N] [--hidden H] [--batch B]\n"
      "  demo tensors                a short tour of GPU tensor ops, checked on the host\n"
      "  bench elementwise [--elements N] [--json FILE]\n"
      "  bench dispatch [--ops N] [--json FILE]\n"
      "  bench train [--steps N] [--long-steps N] [--json FILE]\n"
      "  bench matmul [--sizes MxNxK,...] [--variants a,b] [--json FILE]   the kernel ladder vs cuBLAS\n"
      "  map [INPUT] -o OUT [--labels L] [--method tsne|umap] [--perplexity P] [--iterations N] [--seed S]\n"
      "      [--pca D] [--init pca|random] [--repulsion auto|exact|fft] [--grid-spacing H] [--max-step-norm L]\n"
      "      [--n-neighbors K] [--min-dist D] [--epochs E] [--points N]\n"
      "                              t-SNE or UMAP of .npy/IDX/CSV points (no INPUT: 10 clusters in 768-D);\n"
      "                              --pca D: kNN on D principal components (default 50 past 20,000 points)\n"
      "  eval EMBEDDING.npy --input INPUT [--labels L]   kNN recall@10, 10-NN accuracy\n"
      "  tune [--sizes MxNxK,...] [--f32-only]   autotune matmul tiles for this adapter (cached)\n"
      "environment: SURFGRAD_BACKEND=vulkan|gles|metal|d3d12, SURFGRAD_ADAPTER=<name substring>");
}

int cmd_info(const gpu::ContextPtr& ctx) {
  const auto& i = ctx->info();
  const auto& f = ctx->features();
  const auto& l = ctx->limits();
  std::printf("adapter          %s\n", i.name.c_str());
  std::printf("type             %s\n", i.adapter_type.c_str());
  std::printf("vendor           %s %s\n", i.vendor.c_str(), i.architecture.c_str());
  std::printf("driver           %s\n", i.driver.c_str());
  std::printf("backend          %s\n", i.backend.c_str());
  std::printf("implementation   %s\n", i.implementation.c_str());
  std::printf("shader-f16       %s\n", f.shader_f16 ? "yes" : "no");
  std::printf("subgroups        %s (sizes %u-%u)\n", f.subgroups ? "yes" : "no", f.subgroup_min_size, f.subgroup_max_size);
  std::printf("timestamp-query  %s\n", f.timestamp_query ? "yes" : "no");
  std::printf("subgroup-matrix  no (not offered by wgpu-native's C API)\n");
  std::printf("adapter features");
  for (auto& s : f.adapter_features) std::printf(" %s", s.c_str());
  std::printf("\nlimits           maxBufferSize %llu, maxStorageBufferBindingSize %llu, maxStorageBuffersPerShaderStage %u,\n"
              "                 maxComputeWorkgroupsPerDimension %u, maxComputeInvocationsPerWorkgroup %u, "
              "maxComputeWorkgroupStorageSize %u\n",
              (unsigned long long)l.max_buffer_size, (unsigned long long)l.max_storage_buffer_binding_size,
              l.max_storage_buffers_per_shader_stage, l.max_compute_workgroups_per_dimension,
              l.max_compute_invocations_per_workgroup, l.max_compute_workgroup_storage_size);
  return 0;
}

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "demo";  // no command: the default job, the moons demo
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    usage();
    return 0;
  }
  try {
    if (cmd != "info" && cmd != "demo" && cmd != "bench" && cmd != "tune" && cmd != "map" && cmd != "eval") {
      std::fprintf(stderr, "surfgrad: unknown command '%s'\n", cmd.c_str());
      usage();
      return 2;
    }
    auto ctx = gpu::Context::create();
    if (cmd == "info") return cmd_info(ctx);
    if (cmd == "tune") return cmd_tune(ctx, argc - 2, argv + 2);
    if (cmd == "map") return cmd_map(ctx, argc - 2, argv + 2);
    if (cmd == "eval") return cmd_eval(ctx, argc - 2, argv + 2);
    if (cmd == "demo") {
      std::string which = argc > 2 && argv[2][0] != '-' ? argv[2] : "moons";
      int rest = argc > 2 && argv[2][0] != '-' ? 3 : 2;
      if (which == "tensors") return cmd_demo(ctx);
      if (which == "moons") return cmd_demo_moons(ctx, argc - rest, argv + rest);
      if (which == "mnist") return cmd_demo_mnist(ctx, argc - rest, argv + rest);
      std::fprintf(stderr, "surfgrad: unknown demo '%s' (moons, mnist, tensors)\n", which.c_str());
      return 2;
    }
    return cmd_bench(ctx, argc - 2, argv + 2);
  } catch (const Error& e) {
    std::fprintf(stderr, "surfgrad: %s\n", e.what());
    return 1;
  }
}
