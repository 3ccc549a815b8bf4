// surfgrad._core: the module, its exceptions and its contexts. The Python package
// (python/surfgrad) wraps this module; users never import it directly.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <mutex>

#include "bindings.hpp"
#include "surfgrad/error.hpp"

namespace nb = nanobind;

namespace surfgrad::python {

gpu::ContextPtr context_for(const std::string& adapter) {
  // Intentionally never destroyed: tensors still alive at interpreter exit hold the context
  // too, and tearing down a Vulkan device during static destruction (after the driver's own
  // atexit handlers) is a known way to crash at exit.
  static auto* contexts = new std::map<std::string, gpu::ContextPtr>;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  // One context per adapter: a substring that names an adapter already in use (t.device gives
  // its full name) gets that adapter's context, so tensors made from it can meet in one op.
  if (!adapter.empty())
    for (auto& [key, existing] : *contexts)
      if (existing && !existing->device_lost() && existing->info().name.find(adapter) != std::string::npos)
        return existing;
  auto& ctx = (*contexts)[adapter];
  if (!ctx || ctx->device_lost()) {
    gpu::ContextOptions options;
    options.adapter = adapter;
    ctx = gpu::Context::create(options);
  }
  return ctx;
}

namespace {

// Python exception types, one per family of ErrorKind. Each also derives from surfgrad.Error
// so that `except sg.Error` catches everything the library raises.
struct ExceptionTypes {
  PyObject *base, *shape, *dtype, *value, *index, *memory, *io, *device_lost, *cancelled, *runtime;
};
ExceptionTypes types;

PyObject* new_exception(nb::module_& m, const char* name, PyObject* builtin, const char* doc) {
  PyObject* bases = builtin ? PyTuple_Pack(2, types.base, builtin) : PyTuple_Pack(1, PyExc_Exception);
  std::string qualified = std::string("surfgrad.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  Py_DECREF(bases);
  if (!type) throw nb::python_error();
  m.attr(name) = nb::borrow(type);
  return type;
}

PyObject* exception_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Shape: return types.shape;
    case ErrorKind::DType: return types.dtype;
    case ErrorKind::Value: return types.value;
    case ErrorKind::Index: return types.index;
    case ErrorKind::OutOfMemory: return types.memory;
    case ErrorKind::IO: return types.io;
    case ErrorKind::DeviceLost: return types.device_lost;
    case ErrorKind::Cancelled: return types.cancelled;
    default: return types.runtime;  // limits, unsupported features, shader compilation, device
  }
}

}  // namespace

void bind_errors(nb::module_& m) {
  types.base = new_exception(m, "Error", nullptr, "Base of every error surfgrad raises.");
  types.shape = new_exception(m, "ShapeError", PyExc_ValueError, "Incompatible or invalid shapes, axes or ranks.");
  types.dtype = new_exception(m, "DTypeError", PyExc_ValueError, "An unsupported or mismatched element type.");
  types.value = new_exception(m, "ArgumentError", PyExc_ValueError, "An argument out of its valid range.");
  types.index = new_exception(m, "IndexOutOfRange", PyExc_ValueError, "An index out of bounds.");
  types.memory = new_exception(m, "OutOfMemoryError", PyExc_MemoryError, "The device could not allocate.");
  types.io = new_exception(m, "FileError", PyExc_OSError, "Reading or writing a file, or its format.");
  types.device_lost =
      new_exception(m, "DeviceLost", PyExc_RuntimeError, "The GPU device is gone; create tensors anew.");
  types.cancelled = new_exception(m, "Cancelled", PyExc_RuntimeError,
                                  "A long computation stopped because its progress callback asked it to.");
  types.runtime = new_exception(m, "DeviceError", PyExc_RuntimeError,
                                "Adapter limits, missing features, shader compilation, other device errors.");
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      // The message as C++ users see it: "shape error: matmul: ..."
      PyErr_SetString(exception_for(e.kind()), e.what());
    }
  });
}

}  // namespace surfgrad::python

using namespace surfgrad::python;

NB_MODULE(_core, m) {
  m.doc() = "surfgrad's C++ core (use the surfgrad package, not this module)";
  // Tensors alive at interpreter exit are expected (module globals in notebooks): no report.
  nb::set_leak_warnings(false);
  bind_errors(m);
  bind_tensor(m);
  bind_training(m);
  bind_maps(m);

  m.def(
      "device_info",
      [](const std::string& adapter) {
        auto ctx = context_for(adapter);
        const auto& info = ctx->info();
        const auto& f = ctx->features();
        const auto& l = ctx->limits();
        nb::dict d;
        d["adapter"] = info.name;
        d["vendor"] = info.vendor;
        d["architecture"] = info.architecture;
        d["description"] = info.description;
        d["driver"] = info.driver;
        d["backend"] = info.backend;
        d["adapter_type"] = info.adapter_type;
        d["implementation"] = info.implementation;
        d["is_cpu"] = info.is_cpu;
        nb::dict features;
        features["shader_f16"] = f.shader_f16;
        features["subgroups"] = f.subgroups;
        features["timestamp_query"] = f.timestamp_query;
        features["subgroup_min_size"] = f.subgroup_min_size;
        features["subgroup_max_size"] = f.subgroup_max_size;
        features["adapter_features"] = f.adapter_features;
        features["device_features"] = f.device_features;
        d["features"] = features;
        nb::dict limits;
        limits["max_buffer_size"] = l.max_buffer_size;
        limits["max_storage_buffer_binding_size"] = l.max_storage_buffer_binding_size;
        limits["max_storage_buffers_per_shader_stage"] = l.max_storage_buffers_per_shader_stage;
        limits["min_storage_buffer_offset_alignment"] = l.min_storage_buffer_offset_alignment;
        limits["max_compute_workgroups_per_dimension"] = l.max_compute_workgroups_per_dimension;
        limits["max_compute_invocations_per_workgroup"] = l.max_compute_invocations_per_workgroup;
        limits["max_compute_workgroup_storage_size"] = l.max_compute_workgroup_storage_size;
        limits["max_compute_workgroup_size_x"] = l.max_compute_workgroup_size_x;
        d["limits"] = limits;
        return d;
      },
      nb::arg("adapter") = "");
  m.def("sync", [](const std::string& adapter) { context_for(adapter)->sync(); }, nb::arg("adapter") = "");
  // Dispatches recorded since the last submission (tests count what lazy mode fused).
  m.def(
      "_pending_dispatches", [](const std::string& adapter) { return context_for(adapter)->pending_dispatches(); },
      nb::arg("adapter") = "");
}
