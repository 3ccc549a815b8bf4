// The one seam between the layers above (tensor ops, maps, optimizers, quality measures) and the
// gpu layer: compile a kernel from a WGSL file (or generated source) and its specialisation
// values; launch it with tensors and a parameter block.
//
//   auto k = kernels::Program::file(ctx, "tsne_attraction.wgsl", {{"K", "90"}});
//   k.launch({attract, y, knn.indices, weights, incoming}, {n}, kernels::groups_for(n, 64));
//
// What a launch checks, against the bindings the WGSL declares (read from the source): one tensor
// per storage binding; each tensor's dtype matches the binding's element type (f32 for
// `array<vec2<f32>>`, u32 or i32 for `array<atomic<u32>>`); each tensor is dense and starts at its
// buffer's beginning — unless it is passed as `kernels::view(t)`, whose offset and strides the
// caller hands to the kernel itself in the parameter block. The parameter block is words
// (u32, i32 and f32 bit patterns); sizes are checked to fit 32 bits.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "surfgrad/gpu.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad::kernels {

// {{KEY}} → text, filled into the WGSL template.
using Values = std::map<std::string, std::string>;

struct CompileOptions {
  bool f16 = false;        // the kernel uses f16 (enable line; the adapter must have shader-f16)
  bool subgroups = false;  // the kernel uses subgroup builtins
  // Every memory access is guarded by the kernel's own bounds (and tested on fuzzed shapes):
  // compiled without runtime bounds checks where the context trusts such kernels.
  bool validated = false;
  std::string entry = "main";
};

// One storage binding's tensor. A plain tensor must be dense from its buffer's start (offset 0,
// contiguous); view() lets the kernel address it through offset and strides it gets as
// parameters; bits() skips the dtype check (a kernel that reinterprets the words).
struct Arg {
  Arg(const Tensor& t) : tensor(&t) {}
  Arg(const gpu::Buffer& b) : buffer(&b) {}  // scratch the seam's caller owns (no tensor)
  const Tensor* tensor = nullptr;
  const gpu::Buffer* buffer = nullptr;
  bool strided = false;
  bool any_dtype = false;
};
inline Arg view(const Tensor& t) {
  Arg a(t);
  a.strided = true;
  return a;
}
inline Arg bits(const Tensor& t) {
  Arg a(t);
  a.any_dtype = true;
  return a;
}

// `t` itself when it is dense from its buffer's start, else a dense copy: for tensors a caller
// hands in (a sliced kNN result, say) that a kernel reads as plain rows.
Tensor dense(const Tensor& t);
// A binding this launch of the kernel does not read: any tensor fills it (WebGPU binds them all).
inline Arg unread(const Tensor& t) {
  Arg a = view(t);
  a.any_dtype = true;
  return a;
}

// One word of the parameter block. Integers must fit 32 bits (a size past 2^32 − 1 is refused,
// not wrapped); doubles are stored as f32.
struct Param {
  uint32_t word;
  Param(uint32_t v) : word(v) {}
  Param(int32_t v) : word(uint32_t(v)) {}
  Param(int64_t v);
  Param(uint64_t v);
  Param(float v);
  Param(double v) : Param(float(v)) {}
  Param(bool v) : word(v ? 1u : 0u) {}
};
// The parameter block: words written inline (up to kInlineWords; no allocation on the hot path),
// or a view of a caller's vector, which must outlive the launch (a temporary does).
class Params {
 public:
  static constexpr size_t kInlineWords = 64;
  Params() = default;
  Params(std::initializer_list<Param> words);
  Params(const std::vector<uint32_t>& words) : view_(words), viewed_(true) {}
  Params& add(Param p);
  std::span<const uint32_t> words() const {
    return viewed_ ? view_ : std::span<const uint32_t>(inline_.data(), count_);
  }

 private:
  std::array<uint32_t, kInlineWords> inline_;
  size_t count_ = 0;
  std::span<const uint32_t> view_;
  bool viewed_ = false;
};

// Enough workgroups of `per_group` threads (or items) for `items`, over x/y/z where one axis is
// too few (kernels recover the linear id with linear_group()).
gpu::Workgroups groups_for(const gpu::Context& ctx, uint64_t items, uint64_t per_group);

class Program {
 public:
  // A kernel from src/kernels/<file>: the implementation's enable lines, common.wgsl (the
  // parameter block), the files it names in `// #include "x.wgsl"` lines, then the file, with
  // {{KEY}}s filled. Cached per context by file and values.
  static Program file(const gpu::ContextPtr& ctx, std::string_view file, const Values& values = {},
                      const CompileOptions& options = {});
  // A generated kernel: `make` returns its WGSL body (bindings, functions, entry point; `//
  // #include` lines allowed); the seam adds what file() adds. `key` identifies the body and the
  // options (the dtypes it was generated for, say): the hot path looks up the key instead of
  // building the source.
  static Program generated(const gpu::ContextPtr& ctx, const std::string& key, const std::function<std::string()>& make,
                           const CompileOptions& options = {});
  // A kernel compiled from exactly `wgsl` (entry "main"): no enable lines, no common.wgsl, for
  // probes of the WGSL compiler itself (`surfgrad bench coop`), whose text must reach it unchanged
  // and may be refused (the compiler's error is thrown). Its parameter block, if it reads one, is
  // its own `var<uniform>` at the binding after its storage bindings.
  static Program verbatim(const gpu::ContextPtr& ctx, const std::string& wgsl, bool validated = false);

  void launch(std::initializer_list<Arg> args, const Params& params, gpu::Workgroups groups) const;
  void launch(std::span<const Arg> args, const Params& params, gpu::Workgroups groups) const;
  // The workgroup counts (three u32) read on the GPU from `counts` (a u32 tensor) at word
  // `word`: an earlier kernel decides how much work there is, without a readback.
  void launch_indirect(std::initializer_list<Arg> args, const Params& params, const Tensor& counts,
                       uint64_t word = 0) const;

  const gpu::Kernel& kernel() const { return kernel_; }
  const gpu::ContextPtr& context() const { return ctx_; }

 private:
  Program(gpu::ContextPtr ctx, gpu::Kernel kernel) : ctx_(std::move(ctx)), kernel_(std::move(kernel)) {}
  static constexpr size_t kMaxBindings = 16;
  // Checks `args` against the declared bindings and fills `buffers` with theirs.
  void resolve(std::span<const Arg> args, std::array<const gpu::Buffer*, kMaxBindings>& buffers) const;
  void dispatch(std::span<const Arg> args, const Params& params, gpu::Workgroups groups) const;
  gpu::ContextPtr ctx_;
  gpu::Kernel kernel_;
};

// Cold start (issue 35; docs/cold_start.md): the kernel a later Program::file (or generated)
// call with the same arguments will ask for, built now on a worker thread while earlier work
// runs. That call finds it ready (or waits for the build under way; never builds twice); a kernel
// that fails to build throws there, named. Results are the same bits: it is the same pipeline.
// Returns whether a build was queued (not where it is built already, SURFGRAD_PREWARM=0, under
// Dawn, or in WebAssembly).
bool prewarm(const gpu::ContextPtr& ctx, std::string_view file, const Values& values = {},
             const CompileOptions& options = {});
bool prewarm_generated(const gpu::ContextPtr& ctx, const std::string& key, const std::function<std::string()>& make,
                       const CompileOptions& options = {});

// While one lives on this thread, Program::file and Program::generated queue the kernel they
// would build on the prewarm's workers (the same key and source: prewarm / prewarm_generated)
// and return a Program whose launches do nothing. So an op's own code names the kernel it would
// use without running: called on small tensors of the layout the real call will have, it queues
// exactly that kernel (tensor/op_prewarm.hpp; the first map's tensor ops, issue 35). Tensors made
// meanwhile hold no values (nothing reads them back). Nests; per thread. `ahead`: while it lives
// (nested ones too), the kernels are queued ahead of the builds queued so far (Context::prewarm):
// they are needed next.
class PrewarmOnly {
 public:
  explicit PrewarmOnly(bool ahead = false);
  ~PrewarmOnly();
  PrewarmOnly(const PrewarmOnly&) = delete;
  PrewarmOnly& operator=(const PrewarmOnly&) = delete;
  static bool active();
  static bool ahead();

 private:
  bool ahead_;
};

// Copies dense `src` into dense `dst` (same byte size) with the implementation's own buffer
// copy (copyBufferToBuffer), outside compute passes.
void copy_buffer(const Tensor& src, const Tensor& dst);

// The WGSL source Program::file would compile (for tests and tools).
std::string assemble(const gpu::Context& ctx, std::string_view file, const Values& values,
                     const CompileOptions& options);
// A kernel file's text as embedded at build time.
std::string_view wgsl_source(std::string_view name);
// Replaces every {{KEY}} in `text`; a key without a value is an error naming it.
std::string fill_template(std::string_view text, const Values& values);

}  // namespace surfgrad::kernels
