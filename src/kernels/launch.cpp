// The launch seam (see launch.hpp): assembling kernel sources, and checking what is bound.
#include "kernels/launch.hpp"

#include <limits>

#include "kernels/tensor_access.hpp"

namespace surfgrad::kernels {

namespace {

constexpr std::string_view kIncludeDirective = "// #include \"";

// Appends the files `text` names in `// #include "x.wgsl"` lines (each once), filled with
// `values`, to `out`.
void append_includes(std::string_view text, const Values& values, std::vector<std::string>& seen, std::string& out) {
  size_t pos = 0;
  while ((pos = text.find(kIncludeDirective, pos)) != std::string_view::npos) {
    pos += kIncludeDirective.size();
    size_t end = text.find('"', pos);
    if (end == std::string_view::npos) break;
    std::string name(text.substr(pos, end - pos));
    bool known = false;
    for (auto& s : seen) known |= s == name;
    if (known) continue;
    seen.push_back(name);
    std::string included = fill_template(wgsl_source(name), values);
    append_includes(included, values, seen, out);
    out += included;
  }
}

// common.wgsl declares the parameter block at the binding after the kernel's storage bindings
// (its body's and those of the files it includes).
std::string with_common(const gpu::Context& ctx, const std::string& body, const Values& values,
                        const CompileOptions& options) {
  std::string includes;
  std::vector<std::string> seen = {"common.wgsl"};
  append_includes(body, values, seen, includes);
  uint32_t storage = 0;
  for (const auto& b : gpu::declared_bindings(includes + body)) storage += b.uniform ? 0 : 1;
  Values v = values;
  v["META_BINDING"] = std::to_string(storage);
  return ctx.wgsl_preamble(options.f16, options.subgroups) + fill_template(wgsl_source("common.wgsl"), v) + includes +
         body;
}

// Whether a tensor of dtype `d` may be bound where the kernel declares `element`.
bool element_accepts(std::string_view element, DType d) {
  if (element.rfind("atomic<", 0) == 0) return d == DType::u32 || d == DType::i32;
  // vecN<T>: the scalar T
  if (element.rfind("vec", 0) == 0) {
    size_t open = element.find('<');
    if (open != std::string_view::npos) element = element.substr(open + 1, element.size() - open - 2);
  }
  return element == dtype_name(d);
}

}  // namespace

std::string fill_template(std::string_view text, const Values& values) {
  std::string out;
  out.reserve(text.size() + 256);
  size_t pos = 0;
  while (true) {
    size_t open = text.find("{{", pos);
    if (open == std::string_view::npos) break;
    size_t close = text.find("}}", open);
    if (close == std::string_view::npos) throw Error(ErrorKind::Value, "kernel template: an unclosed {{");
    std::string key(text.substr(open + 2, close - open - 2));
    auto it = values.find(key);
    if (it == values.end()) throw Error(ErrorKind::Value, "kernel template: no value for {{" + key + "}}");
    out.append(text.substr(pos, open - pos));
    out += it->second;
    pos = close + 2;
  }
  out.append(text.substr(pos));
  return out;
}

std::string assemble(const gpu::Context& ctx, std::string_view file, const Values& values,
                     const CompileOptions& options) {
  return with_common(ctx, fill_template(wgsl_source(file), values), values, options);
}

Tensor dense(const Tensor& t) { return t.offset() == 0 && t.is_contiguous() ? t : t.clone(); }

Param::Param(int64_t v) : word(uint32_t(v)) {
  if (v < std::numeric_limits<int32_t>::min() || v > int64_t(std::numeric_limits<uint32_t>::max()))
    throw Error(ErrorKind::LimitExceeded, "kernel parameter " + std::to_string(v) +
                                              " does not fit 32 bits; the tensor is too large for one kernel");
}
Param::Param(uint64_t v) : word(uint32_t(v)) {
  if (v > std::numeric_limits<uint32_t>::max())
    throw Error(ErrorKind::LimitExceeded, "kernel parameter " + std::to_string(v) +
                                              " does not fit 32 bits; the tensor is too large for one kernel");
}
Param::Param(float v) {
  static_assert(sizeof word == sizeof v);
  __builtin_memcpy(&word, &v, 4);
}

Params::Params(std::initializer_list<Param> words) {
  for (const Param& p : words) add(p);
}

Params& Params::add(Param p) {
  if (viewed_ || count_ == kInlineWords)
    throw Error(ErrorKind::Value,
                "kernel parameters: more than " + std::to_string(kInlineWords) + " words inline (pass a vector)");
  inline_[count_++] = p.word;
  return *this;
}

gpu::Workgroups groups_for(const gpu::Context& ctx, uint64_t items, uint64_t per_group) {
  return ctx.grid_for((items + per_group - 1) / per_group);
}

namespace {
// The kernel cache's key for a file and its values (Program::file and prewarm agree on it).
std::string file_key(std::string_view file, const Values& values, const CompileOptions& options) {
  std::string key = "file|" + std::string(file) + (options.f16 ? "|f16" : "") + (options.subgroups ? "|sg" : "") + "|" +
                    options.entry;
  for (const auto& [k, v] : values) key += "|" + k + "=" + v;
  return key;
}
}  // namespace

namespace {
thread_local int t_prewarm_only = 0, t_prewarm_ahead = 0;  // PrewarmOnly's depths on this thread
}  // namespace

PrewarmOnly::PrewarmOnly(bool ahead) : ahead_(ahead) { ++t_prewarm_only, t_prewarm_ahead += ahead ? 1 : 0; }
PrewarmOnly::~PrewarmOnly() { --t_prewarm_only, t_prewarm_ahead -= ahead_ ? 1 : 0; }
bool PrewarmOnly::active() { return t_prewarm_only > 0; }
bool PrewarmOnly::ahead() { return t_prewarm_ahead > 0; }

Program Program::file(const gpu::ContextPtr& ctx, std::string_view file, const Values& values,
                      const CompileOptions& options) {
  if (PrewarmOnly::active()) {
    prewarm(ctx, file, values, options);
    return Program(ctx, {});
  }
  return Program(ctx, ctx->kernel(
                          file_key(file, values, options), [&] { return assemble(*ctx, file, values, options); },
                          options.entry, options.validated));
}

bool prewarm(const gpu::ContextPtr& ctx, std::string_view file, const Values& values, const CompileOptions& options) {
  // The source is assembled here (string work, well under a millisecond); the worker compiles.
  return ctx->prewarm(file_key(file, values, options), assemble(*ctx, file, values, options), options.entry,
                      options.validated, PrewarmOnly::ahead());
}

bool prewarm_generated(const gpu::ContextPtr& ctx, const std::string& key, const std::function<std::string()>& make,
                       const CompileOptions& options) {
  return ctx->prewarm(key, with_common(*ctx, make(), {}, options), options.entry, options.validated,
                      PrewarmOnly::ahead());
}

Program Program::generated(const gpu::ContextPtr& ctx, const std::string& key, const std::function<std::string()>& make,
                           const CompileOptions& options) {
  if (PrewarmOnly::active()) {
    prewarm_generated(ctx, key, make, options);
    return Program(ctx, {});
  }
  return Program(
      ctx, ctx->kernel(key, [&] { return with_common(*ctx, make(), {}, options); }, options.entry, options.validated));
}

Program Program::verbatim(const gpu::ContextPtr& ctx, const std::string& wgsl, bool validated) {
  return Program(ctx, ctx->kernel(wgsl, "main", validated));
}

void Program::resolve(std::span<const Arg> args, std::array<const gpu::Buffer*, kMaxBindings>& buffers) const {
  const auto& declared = kernel_.storage_bindings();
  const std::string& entry = kernel_.entry();
  if (args.size() != declared.size() || args.size() > kMaxBindings)
    throw Error(ErrorKind::Value, "launch of kernel '" + entry + "': " + std::to_string(args.size()) +
                                      " tensors given for " + std::to_string(declared.size()) + " storage bindings");
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    const gpu::KernelBinding& b = declared[i];
    if (!a.tensor) {
      buffers[i] = a.buffer;
      continue;
    }
    const Tensor& t = *a.tensor;
    if (!t.defined())
      throw Error(ErrorKind::Value, "launch of kernel '" + entry + "': binding " + std::to_string(i) + " ('" + b.name +
                                        "') got an empty tensor");
    if (t.context().get() != ctx_.get())
      throw Error(ErrorKind::Value, "launch of kernel '" + entry + "': binding '" + b.name + "' (" + t.describe() +
                                        ") lives on another device context");
    if (!a.any_dtype && !element_accepts(b.element, t.dtype()))
      throw Error(ErrorKind::DType, "launch of kernel '" + entry + "': binding '" + b.name + "' holds " + b.element +
                                        ", got " + t.describe());
    if (!a.strided && (t.offset() != 0 || !t.is_contiguous()))
      throw Error(ErrorKind::Value, "launch of kernel '" + entry + "': binding '" + b.name + "' (" + t.describe() +
                                        ") is a view (offset " + std::to_string(t.offset()) +
                                        ") and this kernel reads dense rows from the start; pass t.contiguous() "
                                        "copied to fresh storage (or the kernel must take offset and strides)");
    buffers[i] = TensorAccess::buffer(t);
    if (b.writable) TensorAccess::before_write(t);  // lazy readers of its old values run first
  }
}

void Program::dispatch(std::span<const Arg> args, const Params& params, gpu::Workgroups groups) const {
  if (!kernel_.state) return;  // made under PrewarmOnly: queued, not built
  std::array<const gpu::Buffer*, kMaxBindings> buffers;
  resolve(args, buffers);
  ctx_->dispatch(kernel_, std::span<const gpu::Buffer* const>(buffers.data(), args.size()), params.words(), groups);
}

void Program::launch(std::initializer_list<Arg> args, const Params& params, gpu::Workgroups groups) const {
  dispatch(std::span<const Arg>(args.begin(), args.size()), params, groups);
}

void Program::launch(std::span<const Arg> args, const Params& params, gpu::Workgroups groups) const {
  dispatch(args, params, groups);
}

void Program::launch_indirect(std::initializer_list<Arg> args, const Params& params, const Tensor& counts,
                              uint64_t word) const {
  if (!kernel_.state) return;  // made under PrewarmOnly
  if (counts.dtype() != DType::u32 || counts.offset() != 0 || uint64_t(counts.numel()) < word + 3)
    throw Error(ErrorKind::Value, "indirect launch of kernel '" + kernel_.entry() +
                                      "': the counts must be three u32 at word " + std::to_string(word) +
                                      " of a dense u32 tensor, got " + counts.describe());
  std::array<const gpu::Buffer*, kMaxBindings> buffers;
  resolve(std::span<const Arg>(args.begin(), args.size()), buffers);
  ctx_->dispatch_indirect(kernel_, std::span<const gpu::Buffer* const>(buffers.data(), args.size()), params.words(),
                          *TensorAccess::buffer(counts), word * 4);
}

void copy_buffer(const Tensor& src, const Tensor& dst) {
  uint64_t bytes = uint64_t(src.numel()) * dtype_size(src.dtype());
  if (src.offset() || dst.offset() || !src.is_contiguous() || !dst.is_contiguous() ||
      bytes != uint64_t(dst.numel()) * dtype_size(dst.dtype()))
    throw Error(ErrorKind::Value, "copy_buffer: " + src.describe() + " into " + dst.describe() +
                                      ": both must be dense from their start and of one byte size");
  if (!bytes) return;
  const gpu::Buffer* from = TensorAccess::buffer(src);
  const gpu::Buffer* to = TensorAccess::buffer(dst);
  TensorAccess::before_write(dst);
  src.context()->copy(*from, 0, *to, 0, bytes);
}

}  // namespace surfgrad::kernels
