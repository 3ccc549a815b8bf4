// surfgrad._core.Tensor: a differentiable GPU tensor (surfgrad::Var) with PyTorch's names.
// Host conversion rules (which numpy dtypes are accepted, copies of non-contiguous arrays) live
// in python/surfgrad/_tensor.py; this file checks again what reaches it, so that no call from
// Python, however wrong, can reach the library with a bad pointer or size.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>

#include "bindings.hpp"
#include "surfgrad/autograd.hpp"

namespace nb = nanobind;

namespace surfgrad::python {
namespace {

using HostArray = nb::ndarray<nb::c_contig, nb::device::cpu>;

DType dtype_of(const HostArray& a) {
  auto t = a.dtype();
  if (t == nb::dtype<float>()) return DType::f32;
  if (t == nb::dtype<int32_t>()) return DType::i32;
  if (t == nb::dtype<uint32_t>()) return DType::u32;
  if (t.code == uint8_t(nb::dlpack::dtype_code::Float) && t.bits == 16 && t.lanes == 1) return DType::f16;
  throw Error(ErrorKind::DType, "tensor: the array's element type is not float32, float16, int32 or uint32");
}

Shape shape_of(const HostArray& a) {
  Shape shape;
  for (size_t i = 0; i < a.ndim(); ++i) shape.push_back(int64_t(a.shape(i)));
  return shape;
}

Var from_array(const gpu::ContextPtr& ctx, const HostArray& a, bool requires_grad) {
  Shape shape = shape_of(a);
  if (int(shape.size()) > kMaxRank)
    throw Error(ErrorKind::Shape,
                "tensor: rank " + std::to_string(shape.size()) + " exceeds the maximum of " + std::to_string(kMaxRank));
  return Var(Tensor::from_host(ctx, a.data(), shape, dtype_of(a)), requires_grad);
}

nb::tuple shape_tuple(const Shape& shape) {
  nb::list l;
  for (int64_t s : shape) l.append(s);
  return nb::tuple(l);
}

// A second operand: a Tensor as it is, anything else converted by the Python layer's rules
// (numbers and arrays) onto the first operand's device.
Var operand(nb::handle h, const Var& like) {
  if (nb::isinstance<Var>(h)) return nb::cast<Var>(h);
  nb::object array = nb::module_::import_("surfgrad._tensor").attr("_host_array")(h);
  return from_array(like.context(), nb::cast<HostArray>(array), false);
}

bool is_number(nb::handle h) { return PyFloat_Check(h.ptr()) || (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())); }

// dim=None (all axes), an int, or a sequence of ints.
// nb::cast failures become TypeError with the argument's name (by default nanobind would
// raise RuntimeError: std::bad_cast).
template <typename T>
T cast_arg(nb::handle h, const char* what) {
  try {
    return nb::cast<T>(h);
  } catch (const nb::cast_error&) {
    throw nb::type_error((std::string(what) + ": expected ints, got " +
                          nb::cast<std::string>(nb::str(nb::handle((PyObject*)Py_TYPE(h.ptr())).attr("__name__"))))
                             .c_str());
  }
}

std::vector<int> axes_of(nb::handle dim) {
  if (dim.is_none()) return {};
  if (PyLong_Check(dim.ptr())) return {cast_arg<int>(dim, "dim")};
  return cast_arg<std::vector<int>>(dim, "dim");
}

// shape as f(2, 3) or f((2, 3)) or f([2, 3]).
Shape shape_from_args(const nb::args& args) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return cast_arg<Shape>(args[0], "shape");
  return cast_arg<Shape>(args, "shape");
}

DType dtype_from_name(const std::string& name) {
  if (name == "float32") return DType::f32;
  if (name == "float16") return DType::f16;
  if (name == "int32") return DType::i32;
  if (name == "uint32") return DType::u32;
  throw Error(ErrorKind::DType, "dtype '" + name + "': surfgrad has float32, float16, int32 and uint32");
}

std::string dtype_numpy_name(DType d) {
  switch (d) {
    case DType::f32: return "float32";
    case DType::f16: return "float16";
    case DType::i32: return "int32";
    default: return "uint32";
  }
}

struct NoGrad {
  std::unique_ptr<NoGradGuard> guard;
};

}  // namespace

void bind_tensor(nb::module_& m) {
  auto cls = nb::class_<Var>(m, "Tensor", "A tensor on the GPU, recorded for autograd where it requires a gradient.");

  // ---- host data ----
  m.def(
      "from_array",
      [](const HostArray& a, const std::string& adapter, bool requires_grad) {
        return from_array(context_for(adapter), a, requires_grad);
      },
      nb::arg("array"), nb::arg("adapter") = "", nb::arg("requires_grad") = false);
  cls.def("_copy_to", [](const Var& self, nb::ndarray<nb::c_contig, nb::device::cpu> out) {
    const Tensor& t = self.value();
    if (dtype_of(out) != t.dtype() || shape_of(out) != t.shape())
      throw Error(ErrorKind::Shape, "numpy: output array does not match " + t.describe());
    t.to_host(out.data());
  });

  // ---- what it is ----
  cls.def_prop_ro("shape", [](const Var& v) { return shape_tuple(v.shape()); })
      .def_prop_ro("ndim", [](const Var& v) { return v.rank(); })
      .def("numel", [](const Var& v) { return v.numel(); })
      .def("dim", [](const Var& v) { return v.rank(); })
      .def("__len__",
           [](const Var& v) {
             if (v.rank() == 0) throw nb::type_error("len() of a 0-d tensor");
             return v.shape(0);
           })
      .def_prop_ro("_dtype_name", [](const Var& v) { return dtype_numpy_name(v.dtype()); })
      .def_prop_ro("device", [](const Var& v) { return v.context()->info().name; })
      .def("_describe", [](const Var& v) { return v.value().describe(); })
      .def("is_contiguous", [](const Var& v) { return v.value().is_contiguous(); });

  // ---- autograd ----
  cls.def_prop_rw(
         "requires_grad", [](const Var& v) { return v.requires_grad(); },
         [](Var& v, bool flag) {
           if (flag == v.requires_grad()) return;
           if (!v.is_leaf())
             throw Error(ErrorKind::Value, "requires_grad can only be changed on leaf tensors (use detach())");
           v = Var(v.value(), flag);
         })
      .def_prop_rw(
          "grad",
          [](const Var& v) -> std::optional<Var> {
            Tensor g = v.grad();
            if (!g.defined()) return std::nullopt;
            return Var(g, false);
          },
          [](const Var& v, nb::handle value) {
            if (!value.is_none()) throw nb::type_error("grad can only be reset to None");
            v.zero_grad();
          },
          nb::arg("value").none())
      .def_prop_ro("is_leaf", [](const Var& v) { return v.is_leaf(); })
      .def(
          "backward",
          [](const Var& v, std::optional<Var> gradient, bool retain_graph) {
            if (gradient)
              v.backward(gradient->value(), retain_graph);
            else
              v.backward(retain_graph);
          },
          nb::arg("gradient").none() = nb::none(), nb::arg("retain_graph") = false)
      .def("detach", &Var::detach)
      .def("zero_grad", &Var::zero_grad);

  nb::class_<NoGrad>(m, "_NoGrad")
      .def(nb::init<>())
      .def("__enter__", [](NoGrad& g) { g.guard = std::make_unique<NoGradGuard>(); })
      .def("__exit__", [](NoGrad& g, nb::args) { g.guard.reset(); });
  m.def("is_grad_enabled", &grad_enabled);
  // Lazy mode (issue 36): elementwise ops record, and a tree of them runs as one kernel when a
  // value is needed (read, bound by another kernel, or realised here). Process-wide.
  m.def("_set_lazy", &surfgrad::set_lazy, nb::arg("on"));
  m.def("is_lazy", &surfgrad::lazy_mode);
  m.def("_realize", [](const std::vector<Var>& vars) {
    std::vector<Tensor> tensors;
    for (const Var& v : vars) tensors.push_back(v.value());
    surfgrad::realize(tensors);
  });

  // ---- views and shape ops ----
  cls.def("reshape", [](const Var& v, nb::args shape) { return v.reshape(shape_from_args(shape)); })
      .def("view", [](const Var& v, nb::args shape) { return v.reshape(shape_from_args(shape)); })
      .def("expand", [](const Var& v, nb::args shape) { return v.expand(shape_from_args(shape)); })
      .def("permute",
           [](const Var& v, nb::args dims) {
             Shape s = shape_from_args(dims);
             return v.permute(std::vector<int>(s.begin(), s.end()));
           })
      .def("transpose", &Var::transpose, nb::arg("dim0"), nb::arg("dim1"))
      .def("t", &Var::t)
      .def_prop_ro("T", &Var::t)
      .def("unsqueeze", &Var::unsqueeze, nb::arg("dim"))
      .def("squeeze", &Var::squeeze, nb::arg("dim"))
      .def("contiguous", &Var::contiguous)
      .def("_slice", &Var::slice)
      .def("to", [](const Var& v, const std::string& dtype) { return v.cast(dtype_from_name(dtype)); })
      .def("float", [](const Var& v) { return v.cast(DType::f32); })
      .def("half", [](const Var& v) { return v.cast(DType::f16); })
      .def("int", [](const Var& v) { return v.cast(DType::i32); });

  // ---- elementwise ----
#define SURFGRAD_UNARY(name) cls.def(#name, &Var::name);
#include "surfgrad/unary_ops.inc"
#undef SURFGRAD_UNARY
  cls.def("__neg__", [](const Var& v) { return -v; }).def("__abs__", [](const Var& v) { return v.abs(); });

  // Binary operators: numbers stay scalars (no tensor is made for them), anything else becomes
  // a tensor on this one's device.
#define BINARY(py, py_r, fn)                                                          \
  cls.def(py, [](const Var& a, nb::handle b) {                                        \
    if (is_number(b)) return fn(a, Var(scalar_like(a.value(), nb::cast<double>(b)))); \
    return fn(a, operand(b, a));                                                      \
  });                                                                                 \
  cls.def(py_r, [](const Var& a, nb::handle b) {                                      \
    if (is_number(b)) return fn(Var(scalar_like(a.value(), nb::cast<double>(b))), a); \
    return fn(operand(b, a), a);                                                      \
  });
  BINARY("__add__", "__radd__", add)
  BINARY("__sub__", "__rsub__", sub)
  BINARY("__mul__", "__rmul__", mul)
  BINARY("__truediv__", "__rtruediv__", div)
  BINARY("__matmul__", "__rmatmul__", matmul)
  BINARY("maximum", "_rmaximum", maximum)
  BINARY("minimum", "_rminimum", minimum)
#undef BINARY
  cls.def("__pow__", [](const Var& a, nb::handle b) {
    if (is_number(b)) return a.pow(nb::cast<double>(b));
    return pow(a, operand(b, a));
  });
  cls.def("pow", [](const Var& a, nb::handle b) {
    if (is_number(b)) return a.pow(nb::cast<double>(b));
    return pow(a, operand(b, a));
  });
  cls.def("__rpow__", [](const Var& a, nb::handle b) {
    if (is_number(b)) return pow(Var(scalar_like(a.value(), nb::cast<double>(b))), a);
    return pow(operand(b, a), a);
  });
  cls.def("matmul", [](const Var& a, const Var& b) { return a.matmul(b); });
  cls.def("add", [](const Var& a, const Var& b) { return a + b; });
  cls.def("sub", [](const Var& a, const Var& b) { return a - b; });
  cls.def("mul", [](const Var& a, const Var& b) { return a * b; });
  cls.def("div", [](const Var& a, const Var& b) { return a / b; });

  // Comparisons give uint32 masks (1 where true) and are not differentiable.
#define COMPARE(py, fn)                                                                                \
  cls.def(py, [](const Var& a, nb::handle b) {                                                         \
    Tensor other = is_number(b) ? scalar_like(a.value(), nb::cast<double>(b)) : operand(b, a).value(); \
    return Var(fn(a.value(), other));                                                                  \
  });
  COMPARE("eq", eq)
  COMPARE("ne", ne)
  COMPARE("lt", lt)
  COMPARE("le", le)
  COMPARE("gt", gt)
  COMPARE("ge", ge)
  COMPARE("__lt__", lt)
  COMPARE("__le__", le)
  COMPARE("__gt__", gt)
  COMPARE("__ge__", ge)
#undef COMPARE

  // ---- reductions ----
  auto dim_arg = nb::arg("dim").none() = nb::none();
  auto keep_arg = nb::arg("keepdim") = false;
  cls.def(
         "sum", [](const Var& v, nb::handle dim, bool keep) { return v.sum(axes_of(dim), keep); }, dim_arg, keep_arg)
      .def(
          "mean", [](const Var& v, nb::handle dim, bool keep) { return v.mean(axes_of(dim), keep); }, dim_arg, keep_arg)
      .def(
          "max", [](const Var& v, nb::handle dim, bool keep) { return v.max(axes_of(dim), keep); }, dim_arg, keep_arg)
      .def(
          "min", [](const Var& v, nb::handle dim, bool keep) { return v.min(axes_of(dim), keep); }, dim_arg, keep_arg)
      .def(
          "amax", [](const Var& v, nb::handle dim, bool keep) { return v.max(axes_of(dim), keep); }, dim_arg, keep_arg)
      .def(
          "amin", [](const Var& v, nb::handle dim, bool keep) { return v.min(axes_of(dim), keep); }, dim_arg, keep_arg)
      .def(
          "logsumexp", [](const Var& v, nb::handle dim, bool keep) { return v.logsumexp(axes_of(dim), keep); },
          nb::arg("dim"), keep_arg)
      .def(
          "argmax", [](const Var& v, int dim, bool keep) { return Var(v.value().argmax(dim, keep)); }, nb::arg("dim"),
          keep_arg)
      .def(
          "argmin", [](const Var& v, int dim, bool keep) { return Var(v.value().argmin(dim, keep)); }, nb::arg("dim"),
          keep_arg)
      .def("softmax", &Var::softmax, nb::arg("dim"))
      .def("log_softmax", &Var::log_softmax, nb::arg("dim"));

  // ---- functions over several tensors ----
  m.def("where", [](const Var& mask, const Var& a, const Var& b) { return where(mask.value(), a, b); });
  m.def(
      "cat", [](const std::vector<Var>& vars, int dim) { return concat(vars, dim); }, nb::arg("tensors"),
      nb::arg("dim") = 0);
  m.def("gather", [](const Var& x, int dim, const Var& index) { return gather(x, dim, index.value()); });
  m.def("index_select", [](const Var& x, int dim, const Var& index) { return index_select(x, dim, index.value()); });
  // PyTorch's scatter_add / index_add: out-of-place, differentiable in x and src.
  m.def(
      "scatter_add",
      [](const Var& x, int dim, const Var& index, const Var& src) { return scatter_add(x, dim, index.value(), src); },
      nb::arg("input"), nb::arg("dim"), nb::arg("index"), nb::arg("src"));
  m.def(
      "index_add",
      [](const Var& x, int dim, const Var& index, const Var& src) { return index_add(x, dim, index.value(), src); },
      nb::arg("input"), nb::arg("dim"), nb::arg("index"), nb::arg("source"));
  cls.def(
      "scatter_add",
      [](const Var& x, int dim, const Var& index, const Var& src) { return scatter_add(x, dim, index.value(), src); },
      nb::arg("dim"), nb::arg("index"), nb::arg("src"));
  cls.def(
      "index_add",
      [](const Var& x, int dim, const Var& index, const Var& src) { return index_add(x, dim, index.value(), src); },
      nb::arg("dim"), nb::arg("index"), nb::arg("source"));

  // ---- creation on the device ----
  m.def(
      "full",
      [](const Shape& shape, double value, const std::string& dtype, const std::string& adapter, bool rg) {
        return Var(Tensor::full(context_for(adapter), shape, value, dtype_from_name(dtype)), rg);
      },
      nb::arg("shape"), nb::arg("value"), nb::arg("dtype") = "float32", nb::arg("adapter") = "",
      nb::arg("requires_grad") = false);
  m.def(
      "arange",
      [](double start, double stop, double step, const std::string& dtype, const std::string& adapter) {
        return Var(Tensor::arange(context_for(adapter), start, stop, step, dtype_from_name(dtype)));
      },
      nb::arg("start"), nb::arg("stop"), nb::arg("step") = 1, nb::arg("dtype") = "float32", nb::arg("adapter") = "");
  m.def(
      "uniform",
      [](const Shape& shape, uint64_t seed, double low, double high, const std::string& adapter, bool rg) {
        return Var(Tensor::uniform(context_for(adapter), shape, seed, low, high), rg);
      },
      nb::arg("shape"), nb::arg("seed"), nb::arg("low") = 0.0, nb::arg("high") = 1.0, nb::arg("adapter") = "",
      nb::arg("requires_grad") = false);
  m.def(
      "normal",
      [](const Shape& shape, uint64_t seed, double mean, double std, const std::string& adapter, bool rg) {
        return Var(Tensor::normal(context_for(adapter), shape, seed, mean, std), rg);
      },
      nb::arg("shape"), nb::arg("seed"), nb::arg("mean") = 0.0, nb::arg("std") = 1.0, nb::arg("adapter") = "",
      nb::arg("requires_grad") = false);
}

}  // namespace surfgrad::python
