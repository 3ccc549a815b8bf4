// Shared pieces of the Python extension surfgrad._core: the per-process contexts and the
// registration functions of each binding file.
#pragma once
#include <nanobind/nanobind.h>

#include <string>

#include "surfgrad/gpu.hpp"

namespace surfgrad::python {

// The context for an adapter name substring ("" = the default adapter), created on first use
// and kept for the life of the process: every tensor made through it shares it.
gpu::ContextPtr context_for(const std::string& adapter);

void bind_errors(nanobind::module_& m);
void bind_tensor(nanobind::module_& m);
void bind_training(nanobind::module_& m);
void bind_maps(nanobind::module_& m);

}  // namespace surfgrad::python
