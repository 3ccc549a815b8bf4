// The matmul family's shared description of one product, and the kernel variants (the ladder).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "internal.hpp"
#include "surfgrad/matmul_tuning.hpp"

namespace surfgrad {

// C[b] = A[b]·B[b] for tensors already promoted to ≥ 2-D with broadcast batch axes.
struct MatmulProblem {
  gpu::ContextPtr ctx;
  Tensor a, b, c;  // c is contiguous [batch..., M, N]
  int64_t M = 0, N = 0, K = 0, batches = 1;
  std::vector<uint32_t> meta;  // matmul_common.wgsl's layout (tiles_m, tiles_n left 0)
  DType dtype() const { return a.dtype(); }
};
// `out`: C's tensor (contiguous, the product's shape and dtype) instead of a new one.
MatmulProblem make_problem(const Tensor& a, const Tensor& b, const Tensor* out = nullptr);

// A kernel of the matmul family: matmul_common.wgsl and `file`, with {{T}} the problem's dtype.
// validated: every global access is guarded by M, N, K (compiled without runtime bounds checks
// where the context trusts such kernels).
kernels::Program matmul_program(const MatmulProblem& prob, const std::string& key, const char* file,
                                const std::function<kernels::Values()>& values, bool validated = true);
kernels::Program matmul_program(const gpu::ContextPtr& ctx, DType dtype, const std::string& key, const char* file,
                                const std::function<kernels::Values()>& values, bool validated = true);
// Launches a matmul kernel with C, A, B bound and `meta` (the problem's, with tiles_m and
// tiles_n filled in) over `groups` workgroups.
void launch_matmul(const MatmulProblem& prob, const kernels::Program& kernel, std::vector<uint32_t> meta,
                   int64_t tiles_m, int64_t tiles_n, uint64_t groups);

// Why `p` cannot run on this adapter / dtype ("" when it can).
std::string tiled_unsupported(const gpu::Context& ctx, const TiledParams& p, DType dtype);
void run_tiled(const MatmulProblem& prob, const TiledParams& p);

// One rung of the ladder: a name, what it shows, and how to run it. prepare() does any one-off
// work (the int8 rung quantizes its inputs) and returns the dispatch to time.
struct MatmulVariant {
  int rung;
  std::string name, description;
  double tolerance;  // max |c − ref| / Σ|a·b| on sampled outputs (see matmul_error)
  std::function<std::string(const MatmulProblem&)> unsupported;  // "" = can run
  std::function<std::function<void()>(const MatmulProblem&)> prepare;
};
const std::vector<MatmulVariant>& matmul_variants();

// Normalised error of sampled outputs against a float64 host product: max |c − ref| / Σ|a·b|
// over `samples` entries of batch 0 (reads A, B and C back).
double matmul_error(const MatmulProblem& prob, int samples, uint64_t seed);

// Whether the tiled kernel stages B with vec4 loads for this problem: A and B row-major, K and N,
// row strides, offsets and batch strides multiples of 4 (every vec4 aligned, wholly in or out).
bool matmul_vec4_staging(const MatmulProblem& prob);

// Whether A's columns are contiguous (row stride 1, column stride not: a transposed operand such
// as x^T in a weight gradient): the tiled kernel then stages A's tile with consecutive threads
// along M, so their loads coalesce ("|acol" kernels; the same products, the same bits).
bool matmul_a_columns(const MatmulProblem& prob);

// The parameters Tensor::matmul uses: the autotuner's cached choice for this adapter, dtype and
// shape class, else a heuristic (which differs where B's staging loads are vec4s).
TiledParams matmul_params(const gpu::ContextPtr& ctx, DType dtype, int64_t M, int64_t N, int64_t K,
                          bool vec4_staging = false);

// Split-K for products with few output tiles and a long K (a 64×4096 output is 64 tiles of 64×64,
// half the workgroups an H100 runs at once, each walking all of K): C = Σ_s A[:, K_s]·B[K_s, :]
// over S equal slices of K, run as one batched product of views ([S, M, K/S] of A, [S, K/S, N]
// of B, no copies) into [S, M, N] partials, summed over S into C. split_k_factor gives S for a
// 2-D f32 problem run with tiles `p` (1: no split): on GPUs only (a CPU adapter runs one
// workgroup per core anyway), while the tiles would not fill ~512 workgroups, with K/S ≥ 256 and
// a multiple of 4 (B's slices stay vec4-aligned).
// Whether the matmul family takes a CPU adapter's choices (direct kernels, never split-K) on `ctx`:
// a CPU adapter's, unless matmul_as_gpu() is on, so that the tests and `surfgrad bench lazy` on
// lavapipe reproduce the kernels, splits and dispatch counts a GPU runs (the tiled kernels'
// heuristic tiles and split_k_factor). Results are the same products, only slower there.
bool matmul_cpu_choices(const gpu::Context& ctx);
// The switch: SURFGRAD_MATMUL_AS_GPU=1 turns it on when first read; tests set it directly.
bool& matmul_as_gpu();
int split_k_factor(bool cpu_adapter, DType dtype, int64_t M, int64_t N, int64_t K, int64_t batches,
                   const TiledParams& p);
// The views split-K runs as one batched product: A [M, K] as [S, M, K/S], B [K, N] as
// [S, K/S, N], through the operands' own strides (transposed operands are read in place, as the
// unsplit kernel reads them). 2-D operands, K a multiple of `slices`.
std::pair<Tensor, Tensor> split_k_views(const Tensor& a, const Tensor& b, int slices);
// The slices run with tiles `p`; the partials are summed in slice order straight into C.
void run_split_k(const MatmulProblem& prob, int slices, const TiledParams& p);
// What Tensor::matmul runs for a prepared problem with tiles `p`: split-K where split_k_factor
// says so, else the tiled kernel. The autotuner times candidates through this, so that what it
// picks is what runs.
void run_matmul_with(const MatmulProblem& prob, const TiledParams& p);
// run_matmul_with the tuned tiles (the autotuner's pick or the heuristic).
void run_matmul(const MatmulProblem& prob);

}  // namespace surfgrad
