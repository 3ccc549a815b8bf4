// Indexing on map.wgsl: gather / index_select read through an index tensor; scatter_add /
// index_add add atomically (f32 through a compare-exchange loop), so colliding indices all
// count. Out-of-range indices set the context's fault flag, reported at the next sync.
#include "internal.hpp"

namespace surfgrad {

namespace {

constexpr uint32_t kGatherFault = 1, kScatterFault = 2;

void check_index(const Tensor& index, const char* op) {
  if (index.dtype() != DType::i32)
    throw Error(ErrorKind::DType,
                std::string(op) + ": indices must be i32, got " + index.describe() + "; cast with .cast(DType::i32)");
}

}  // namespace

Tensor gather(const Tensor& x, int axis, const Tensor& index) {
  check_same_context(x, index, "gather");
  check_index(index, "gather");
  int a = normalize_axis(axis, x.rank(), "gather");
  if (index.rank() != x.rank())
    throw Error(ErrorKind::Shape, "gather: index " + index.describe() + " must have the rank of x " + x.describe());
  for (int d = 0; d < x.rank(); ++d)
    if (d != a && index.shape()[d] > x.shape()[d])
      throw Error(ErrorKind::Shape, "gather: index " + index.describe() + " is larger than x " + x.describe() +
                                        " on axis " + std::to_string(d));
  auto ctx = x.context();
  const Shape& shape = index.shape();
  Tensor out = Tensor::empty(ctx, shape, x.dtype());
  MapOperand xs = {&x, x.strides(), x.dtype()};
  xs.strides[a] = 0;  // the axis coordinate comes from the index
  std::string zero = std::string(wgsl_type(x.dtype())) + "(0)";
  launch_map(ctx, "gather", shape, {map_operand(out, shape), xs, map_operand(index, shape)},
             "let j = in1[idx[2]];\n"
             "  if (j < 0 || u32(j) >= param_u32(0u)) {\n"
             "    atomicOr(&fault, " +
                 std::to_string(kGatherFault) +
                 "u);\n"
                 "    out[idx[0]] = " +
                 zero +
                 ";\n"
                 "  } else {\n"
                 "    out[idx[0]] = in0[idx[1] + u32(j) * param_u32(1u)];\n"
                 "  }",
             "", {uint32_t(x.shape()[a]), uint32_t(x.strides()[a])}, {&ctx->fault_flag()},
             {"var<storage, read_write> fault: atomic<u32>;"});
  return out;
}

Tensor index_select(const Tensor& x, int axis, const Tensor& index) {
  check_index(index, "index_select");
  if (index.rank() != 1) throw Error(ErrorKind::Shape, "index_select: index must be 1-D, got " + index.describe());
  int a = normalize_axis(axis, x.rank(), "index_select");
  Shape shape = x.shape();
  shape[a] = index.shape()[0];
  Shape view(x.rank(), 1);
  view[a] = index.shape()[0];
  return gather(x, a, index.reshape(view).expand(shape));
}

Tensor scatter_add(const Tensor& x, int axis, const Tensor& index, const Tensor& src) {
  check_same_context(x, index, "scatter_add");
  check_same_context(x, src, "scatter_add");
  check_index(index, "scatter_add");
  if (src.dtype() != x.dtype())
    throw Error(ErrorKind::DType, "scatter_add: src " + src.describe() + " must have x's dtype " + x.describe());
  if (x.dtype() == DType::f16)  // no 16-bit atomics in WGSL: accumulate in f32
    return scatter_add(x.cast(DType::f32), axis, index, src.cast(DType::f32)).cast(DType::f16);
  int a = normalize_axis(axis, x.rank(), "scatter_add");
  if (index.rank() != x.rank() || src.shape() != index.shape())
    throw Error(ErrorKind::Shape, "scatter_add: index " + index.describe() + " and src " + src.describe() +
                                      " must have the same shape, and x's rank (x is " + x.describe() + ")");
  for (int d = 0; d < x.rank(); ++d)
    if (d != a && index.shape()[d] > x.shape()[d])
      throw Error(ErrorKind::Shape, "scatter_add: index " + index.describe() + " is larger than x " + x.describe() +
                                        " on axis " + std::to_string(d));
  auto ctx = x.context();
  Tensor out = x.clone();
  const Shape& shape = index.shape();
  MapOperand dst = {&out, out.strides(), out.dtype(), true};
  dst.strides[a] = 0;
  std::string add;
  if (x.dtype() == DType::f32) {
    add =
        "var old = atomicLoad(&out[at]);\n"
        "  loop {\n"
        "    let r = atomicCompareExchangeWeak(&out[at], old, bitcast<u32>(bitcast<f32>(old) + in0[idx[1]]));\n"
        "    if (r.exchanged) { break; }\n"
        "    old = r.old_value;\n"
        "  }";
  } else {
    add = "atomicAdd(&out[at], in0[idx[1]]);";
  }
  // f32 targets are bound as atomic<u32> (bit patterns); i32/u32 as their own atomics.
  if (x.dtype() == DType::f32) dst.dtype = DType::u32;
  launch_map(ctx, "scatter_add", shape, {dst, map_operand(src, shape), map_operand(index, shape)},
             "let j = in1[idx[2]];\n"
             "  if (j < 0 || u32(j) >= param_u32(0u)) {\n"
             "    atomicOr(&fault, " +
                 std::to_string(kScatterFault) +
                 "u);\n"
                 "  } else {\n"
                 "    let at = idx[0] + u32(j) * param_u32(1u);\n    " +
                 add + "\n  }",
             "", {uint32_t(x.shape()[a]), uint32_t(out.strides()[a])}, {&ctx->fault_flag()},
             {"var<storage, read_write> fault: atomic<u32>;"});
  return out;
}

Tensor index_add(const Tensor& x, int axis, const Tensor& index, const Tensor& src) {
  check_index(index, "index_add");
  if (index.rank() != 1) throw Error(ErrorKind::Shape, "index_add: index must be 1-D, got " + index.describe());
  int a = normalize_axis(axis, x.rank(), "index_add");
  Shape expect = x.shape();
  expect[a] = index.shape()[0];
  if (src.shape() != expect)
    throw Error(ErrorKind::Shape, "index_add: src " + src.describe() + " must have shape " + shape_str(expect) +
                                      " (x " + x.describe() + " with axis " + std::to_string(a) +
                                      " of index's length)");
  Shape view(x.rank(), 1);
  view[a] = index.shape()[0];
  return scatter_add(x, a, index.reshape(view).expand(expect).contiguous(), src);
}

Tensor concat(const std::vector<Tensor>& tensors, int axis) {
  if (tensors.empty()) throw Error(ErrorKind::Value, "concat: no tensors given");
  const Tensor& first = tensors[0];
  int a = normalize_axis(axis, first.rank(), "concat");
  Shape shape = first.shape();
  shape[a] = 0;
  for (const Tensor& t : tensors) {
    check_same_context(first, t, "concat");
    if (t.dtype() != first.dtype())
      throw Error(ErrorKind::DType, "concat: " + t.describe() + " differs in dtype from " + first.describe());
    bool ok = t.rank() == first.rank();
    for (int d = 0; ok && d < t.rank(); ++d) ok = d == a || t.shape()[d] == first.shape()[d];
    if (!ok)
      throw Error(ErrorKind::Shape, "concat: " + t.describe() + " does not match " + first.describe() +
                                        " outside axis " + std::to_string(a));
    shape[a] += t.shape()[a];
  }
  Tensor out = Tensor::empty(first.context(), shape, first.dtype());
  int64_t at = 0;
  for (const Tensor& t : tensors) {
    if (t.numel()) copy_into(t, out.slice(a, at, at + t.shape()[a]));
    at += t.shape()[a];
  }
  return out;
}

}  // namespace surfgrad
