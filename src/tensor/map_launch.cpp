// Launching map kernels: axis merging, binding declarations, and the choice between the
// strided kernel (map.wgsl) and the one-axis kernels (map_flat.wgsl, map_values.wgsl).
#include <array>

#include "internal.hpp"

namespace surfgrad {

namespace {

// Merges axes that are laid out contiguously for every operand and drops size-1 axes, so the
// kernel's index arithmetic runs over as few axes as possible.
void coalesce(Shape& shape, std::vector<MapOperand>& ops) {
  Shape s;
  std::vector<Shape> st(ops.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !s.empty();
    for (size_t k = 0; k < ops.size() && merge; ++k) merge = st[k].back() == ops[k].strides[d] * shape[d];
    if (merge) {
      s.back() *= shape[d];
      for (size_t k = 0; k < ops.size(); ++k) st[k].back() = ops[k].strides[d];
    } else {
      s.push_back(shape[d]);
      for (size_t k = 0; k < ops.size(); ++k) st[k].push_back(ops[k].strides[d]);
    }
  }
  if (s.empty()) {
    s.push_back(1);
    for (auto& x : st) x.push_back(0);
  }
  shape = s;
  for (size_t k = 0; k < ops.size(); ++k) ops[k].strides = st[k];
}

// The operands' bindings, and the count the shared map code (map_common.wgsl) indexes by.
std::string nops_decl(size_t nops) { return "const NOPS: u32 = " + std::to_string(nops) + "u;\n"; }

std::string decl(uint32_t binding, const std::string& name, const MapOperand& op, bool write) {
  std::string elem = wgsl_type(op.dtype);
  if (op.atomic) elem = "atomic<" + std::string(op.dtype == DType::i32 ? "i32" : "u32") + ">";
  return "@group(0) @binding(" + std::to_string(binding) + ") var<storage, " + (write ? "read_write" : "read") + "> " +
         name + ": array<" + elem + ">;\n";
}

std::vector<uint32_t> map_meta(int64_t n, const Shape& shape, const std::vector<MapOperand>& ops,
                               const std::vector<uint32_t>& params) {
  uint32_t nops = uint32_t(ops.size());
  std::vector<uint32_t> meta(2 + nops + 8 + nops * 8, 0);
  meta[0] = kernels::Param(n).word;
  meta[1] = uint32_t(shape.size());
  for (uint32_t k = 0; k < nops; ++k) meta[2 + k] = kernels::Param(ops[k].tensor->offset()).word;
  for (size_t d = 0; d < shape.size(); ++d) meta[2 + nops + d] = kernels::Param(shape[d]).word;
  for (uint32_t k = 0; k < nops; ++k)
    for (size_t d = 0; d < shape.size(); ++d) meta[2 + nops + 8 + k * 8 + d] = kernels::Param(ops[k].strides[d]).word;
  meta.insert(meta.end(), params.begin(), params.end());
  return meta;
}

void dispatch_map(const kernels::Program& kernel, const std::vector<MapOperand>& ops,
                  const std::vector<const gpu::Buffer*>& extra, const std::vector<uint32_t>& meta,
                  uint64_t workgroups) {
  if (ops.size() + extra.size() > 8) throw Error(ErrorKind::Value, "launch_map: too many bindings");
  std::array<kernels::Arg, 8> args = {kernels::Arg(*ops[0].tensor), kernels::Arg(*ops[0].tensor),
                                      kernels::Arg(*ops[0].tensor), kernels::Arg(*ops[0].tensor),
                                      kernels::Arg(*ops[0].tensor), kernels::Arg(*ops[0].tensor),
                                      kernels::Arg(*ops[0].tensor), kernels::Arg(*ops[0].tensor)};
  size_t n = 0;
  for (const auto& op : ops) {
    kernels::Arg a = kernels::view(*op.tensor);  // offsets and strides travel in the parameters
    a.any_dtype = op.dtype != op.tensor->dtype();
    args[n++] = a;
  }
  for (const auto* e : extra) args[n++] = kernels::Arg(*e);
  kernel.launch(std::span<const kernels::Arg>(args.data(), n), meta, kernel.context()->grid_for(workgroups));
}

}  // namespace

MapOperand map_operand(const Tensor& t, const Shape& shape) { return {&t, broadcast_strides(t, shape), t.dtype()}; }

void launch_map(const gpu::ContextPtr& ctx, const std::string& name, const Shape& shape_in, std::vector<MapOperand> ops,
                const std::string& body, const std::string& helpers, const std::vector<uint32_t>& params,
                const std::vector<const gpu::Buffer*>& extra, const std::vector<std::string>& extra_decls) {
  int64_t n = shape_numel(shape_in);
  if (n == 0) return;
  Shape shape = shape_in;
  coalesce(shape, ops);
  // A fused kernel's intermediates may be f16 where no operand is (tensor/lazy.cpp).
  bool f16 = helpers.find("f16") != std::string::npos;
  std::string bindings = nops_decl(ops.size());
  for (size_t k = 0; k < ops.size(); ++k) {
    f16 |= ops[k].dtype == DType::f16;
    bindings += decl(uint32_t(k), k == 0 ? "out" : "in" + std::to_string(k - 1), ops[k], k == 0);
  }
  for (size_t e = 0; e < extra_decls.size(); ++e)
    bindings += "@group(0) @binding(" + std::to_string(ops.size() + e) + ") " + extra_decls[e] + "\n";
  bool flat = shape.size() == 1;
  const char* file = flat ? "map_flat.wgsl" : "map.wgsl";
  auto kernel = kernels::Program::generated(
      ctx, "map|" + name + "|" + (flat ? "flat|" : "strided|") + bindings + body + helpers,
      [&] {
        return kernels::fill_template(
            kernels::wgsl_source(file),
            {{"BINDINGS", bindings}, {"HELPERS", helpers}, {"BODY", "// op: " + name + "\n  " + body}});
      },
      {.f16 = f16});
  std::vector<uint32_t> meta = map_meta(n, shape, ops, params);
  uint64_t per_group = flat ? 256 * 4 : 256;  // map_flat.wgsl: 4 elements per thread
  dispatch_map(kernel, ops, extra, meta, (uint64_t(n) + per_group - 1) / per_group);
}

std::string values_source(const std::vector<MapOperand>& ops, const std::vector<std::string>& names,
                          const std::string& expr, const std::string& helpers);
std::string values_vec4_source(const std::vector<MapOperand>& ops, const std::vector<std::string>& names,
                               const std::string& expr, const std::string& helpers);

namespace {

// The contiguous fast path's pattern ('v': read as vec4, 's': a broadcast scalar read once), or
// "" where it does not apply: 4-byte elements, n a multiple of 4, and every operand contiguous
// from an offset that is a multiple of 4 elements (a vec4 boundary) or a broadcast scalar.
// map_values.wgsl with its pieces: the strided and the vec4 generators differ only in them.
std::string map_values_kernel(const std::string& bindings, const std::string& helpers, const std::string& args,
                              const std::string& out_t, const std::string& expr, const std::string& loads,
                              const std::string& stores) {
  return kernels::fill_template(kernels::wgsl_source("map_values.wgsl"), {{"BINDINGS", bindings},
                                                                          {"HELPERS", helpers},
                                                                          {"ARGS", args},
                                                                          {"OUT_T", out_t},
                                                                          {"EXPR", expr},
                                                                          {"LOADS", loads},
                                                                          {"STORES", stores}});
}

std::string vec4_pattern(int64_t n, const std::vector<MapOperand>& ops) {
  if (n % 4 != 0) return "";
  std::string pattern;
  for (size_t k = 0; k < ops.size(); ++k) {
    const MapOperand& op = ops[k];
    if (op.atomic || op.dtype == DType::f16 || dtype_size(op.dtype) != 4 || op.dtype != op.tensor->dtype()) return "";
    if (op.strides[0] == 1 && op.tensor->offset() % 4 == 0)
      pattern += 'v';
    else if (op.strides[0] == 0 && k > 0)
      pattern += 's';
    else
      return "";
  }
  return pattern;
}

}  // namespace

void launch_values(const gpu::ContextPtr& ctx, const std::string& name, const Shape& shape_in,
                   std::vector<MapOperand> ops, const std::vector<std::string>& names, const std::string& expr,
                   const std::string& helpers, const std::vector<uint32_t>& params) {
  int64_t n = shape_numel(shape_in);
  if (n == 0) return;
  Shape shape = shape_in;
  coalesce(shape, ops);
  if (shape.size() != 1) {
    std::string out_t = wgsl_type(ops[0].dtype);  // strided: the general kernel
    std::string body;
    for (size_t k = 1; k < ops.size(); ++k)
      body += "let " + names[k - 1] + " = in" + std::to_string(k - 1) + "[idx[" + std::to_string(k) + "]];\n  ";
    body += "out[idx[0]] = " + out_t + "(" + expr + ");";
    launch_map(ctx, name, shape, std::move(ops), body, helpers, params);
    return;
  }
  // The cache key: what the generated source depends on (op, expression, helpers, operand dtypes,
  // and for the vec4 path which operands are broadcast scalars).
  std::string vec4 = vec4_pattern(n, ops);
  std::string key = "values|" + name + "|" + expr + "|" + helpers + "|" + vec4 + "|";
  for (const auto& op : ops) key += dtype_name(op.dtype);
  bool f16 = helpers.find("f16") != std::string::npos;
  for (const auto& op : ops) f16 |= op.dtype == DType::f16;
  auto kernel = kernels::Program::generated(ctx, key,
                                            [&] {
                                              return vec4.empty() ? values_source(ops, names, expr, helpers)
                                                                  : values_vec4_source(ops, names, expr, helpers);
                                            },
                                            {.f16 = f16});
  uint64_t per_group = 256 * kValuesPerThread * (vec4.empty() ? 1 : 4);
  dispatch_map(kernel, ops, {}, map_meta(n, shape, ops, params), (uint64_t(n) + per_group - 1) / per_group);
}

std::string values_source(const std::vector<MapOperand>& ops, const std::vector<std::string>& names,
                          const std::string& expr, const std::string& helpers) {
  std::string out_t = wgsl_type(ops[0].dtype);
  std::string bindings = nops_decl(ops.size()), args, loads, stores;
  for (size_t k = 0; k < ops.size(); ++k) {
    bindings += decl(uint32_t(k), k == 0 ? "out" : "in" + std::to_string(k - 1), ops[k], k == 0);
    if (k) args += std::string(k > 1 ? ", " : "") + names[k - 1] + ": " + wgsl_type(ops[k].dtype);
  }
  // All loads of a thread are issued before any store: the compiler cannot prove the output
  // does not alias the inputs, so interleaved load/store pairs would keep one load in flight.
  for (int e = 0; e < kValuesPerThread; ++e) {
    std::string i = "i" + std::to_string(e);
    loads += "  let " + i + " = first + " + std::to_string(e) + "u * threads;\n";
    std::string call;
    for (size_t k = 1; k < ops.size(); ++k) {
      std::string v = "v" + std::to_string(e) + "_" + std::to_string(k);
      loads += "  var " + v + ": " + wgsl_type(ops[k].dtype) + ";\n  if (" + i + " < n) { " + v + " = in" +
               std::to_string(k - 1) + "[arg(" + std::to_string(2 + k) + "u) + " + i + " * arg(" +
               std::to_string(2 + ops.size() + 8 + 8 * k) + "u)]; }\n";
      call += std::string(k > 1 ? ", " : "") + v;
    }
    stores += "  if (" + i + " < n) { out[arg(2u) + " + i + " * arg(" + std::to_string(2 + ops.size() + 8) +
              "u)] = value_of(" + call + "); }\n";
  }
  return map_values_kernel(bindings, helpers, args, out_t, expr, loads, stores);
}

// The contiguous fast path: each thread moves kValuesPerThread vec4s (16 bytes a load, a grid
// apart, all loads before any store) and applies value_of to each component: the same expression
// per element as values_source, so the same bits. Offsets are multiples of 4 (vec4_pattern).
std::string values_vec4_source(const std::vector<MapOperand>& ops, const std::vector<std::string>& names,
                               const std::string& expr, const std::string& helpers) {
  std::string out_t = wgsl_type(ops[0].dtype);
  std::string bindings = nops_decl(ops.size()), args, loads, stores;
  std::vector<bool> scalar(ops.size(), false);
  for (size_t k = 0; k < ops.size(); ++k) {
    scalar[k] = ops[k].strides[0] == 0;
    std::string t = wgsl_type(ops[k].dtype);
    std::string elem = scalar[k] ? t : "vec4<" + t + ">";
    bindings += "@group(0) @binding(" + std::to_string(k) + ") var<storage, " + (k ? "read" : "read_write") + "> " +
                (k ? "in" + std::to_string(k - 1) : std::string("out")) + ": array<" + elem + ">;\n";
    if (k) args += std::string(k > 1 ? ", " : "") + names[k - 1] + ": " + t;
    if (k && scalar[k])
      loads +=
          "  let s" + std::to_string(k) + " = in" + std::to_string(k - 1) + "[arg(" + std::to_string(2 + k) + "u)];\n";
  }
  loads += "  let n4 = n / 4u;\n";
  for (int e = 0; e < kValuesPerThread; ++e) {
    std::string i = "i" + std::to_string(e);
    loads += "  let " + i + " = first + " + std::to_string(e) + "u * threads;\n";
    for (size_t k = 1; k < ops.size(); ++k) {
      if (scalar[k]) continue;
      std::string v = "v" + std::to_string(e) + "_" + std::to_string(k);
      loads += "  var " + v + ": vec4<" + wgsl_type(ops[k].dtype) + ">;\n  if (" + i + " < n4) { " + v + " = in" +
               std::to_string(k - 1) + "[arg(" + std::to_string(2 + k) + "u) / 4u + " + i + "]; }\n";
    }
    std::string value = "vec4<" + out_t + ">(";
    for (int c = 0; c < 4; ++c) {
      std::string call;
      for (size_t k = 1; k < ops.size(); ++k)
        call +=
            std::string(k > 1 ? ", " : "") +
            (scalar[k] ? "s" + std::to_string(k) : "v" + std::to_string(e) + "_" + std::to_string(k) + "." + "xyzw"[c]);
      value += std::string(c ? ", " : "") + "value_of(" + call + ")";
    }
    stores += "  if (" + i + " < n4) { out[arg(2u) / 4u + " + i + "] = " + value + "); }\n";
  }
  return map_values_kernel(bindings, helpers, args, out_t, expr, loads, stores);
}

}  // namespace surfgrad
