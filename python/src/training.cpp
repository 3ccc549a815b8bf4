// Losses and optimizers for surfgrad.nn / surfgrad.optim. Layers are written in Python over
// Tensor ops (python/surfgrad/nn.py); the optimizers bind the C++ ones because each of their
// steps is one fused kernel per parameter.
#include <nanobind/nanobind.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "surfgrad/nn.hpp"
#include "surfgrad/optim.hpp"

namespace nb = nanobind;

namespace surfgrad::python {

void bind_training(nb::module_& m) {
  m.def(
      "mse_loss", [](const Var& prediction, const Var& target) { return nn::mse_loss(prediction, target.value()); },
      nb::arg("input"), nb::arg("target"));
  m.def(
      "cross_entropy", [](const Var& logits, const Var& labels) { return nn::cross_entropy(logits, labels.value()); },
      nb::arg("input"), nb::arg("target"));
  m.def(
      "bce_with_logits",
      [](const Var& logits, const Var& targets) { return nn::bce_with_logits(logits, targets.value()); },
      nb::arg("input"), nb::arg("target"));

  nb::class_<optim::Optimizer>(m, "Optimizer")
      .def("step", &optim::Optimizer::step)
      .def("zero_grad", &optim::Optimizer::zero_grad)
      .def_prop_rw("lr", &optim::Optimizer::lr, &optim::Optimizer::set_lr);
  nb::class_<optim::SGD, optim::Optimizer>(m, "SGD").def(nb::init<std::vector<Var>, double, double, double, bool>(),
                                                         nb::arg("params"), nb::arg("lr"), nb::arg("momentum") = 0.0,
                                                         nb::arg("weight_decay") = 0.0, nb::arg("nesterov") = false);
  nb::class_<optim::Adam, optim::Optimizer>(m, "Adam")
      .def(nb::init<std::vector<Var>, double, double, double, double, double, bool>(), nb::arg("params"),
           nb::arg("lr") = 1e-3, nb::arg("beta1") = 0.9, nb::arg("beta2") = 0.999, nb::arg("eps") = 1e-8,
           nb::arg("weight_decay") = 0.0, nb::arg("decoupled") = false)
      .def_prop_ro("steps", &optim::Adam::steps);
}

}  // namespace surfgrad::python
