// surfgrad's whole public API in one include.
//
//   #include <surfgrad/surfgrad.hpp>
//   auto ctx = surfgrad::gpu::Context::create();
#pragma once
#include "surfgrad/autograd.hpp"
#include "surfgrad/error.hpp"
#include "surfgrad/gpu.hpp"
#include "surfgrad/gradcheck.hpp"
#include "surfgrad/io.hpp"
#include "surfgrad/maps.hpp"
#include "surfgrad/matmul_tuning.hpp"
#include "surfgrad/nn.hpp"
#include "surfgrad/optim.hpp"
#include "surfgrad/reference.hpp"
#include "surfgrad/tensor.hpp"
