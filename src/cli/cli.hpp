#pragma once
#include <string>

#include "surfgrad/gpu.hpp"

std::string today();  // YYYY-MM-DD (UTC), for benchmark records

int cmd_info(const surfgrad::gpu::ContextPtr& ctx);
int cmd_demo(const surfgrad::gpu::ContextPtr& ctx);
int cmd_bench(const surfgrad::gpu::ContextPtr& ctx, int argc, char** argv);
int cmd_demo_moons(const surfgrad::gpu::ContextPtr& ctx, int argc, char** argv);
int cmd_demo_mnist(const surfgrad::gpu::ContextPtr& ctx, int argc, char** argv);
int cmd_bench_matmul(const surfgrad::gpu::ContextPtr& ctx, int argc, char** argv);
int cmd_tune(const surfgrad::gpu::ContextPtr& ctx, int argc, char** argv);
int cmd_map(const surfgrad::gpu::ContextPtr& ctx, int argc, char** argv);
int cmd_eval(const surfgrad::gpu::ContextPtr& ctx, int argc, char** argv);
