// Bad input ends in the documented exception with a message a user can act on: never a crash,
// a hang or a silent wrong answer.
#include "gpu/testing.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {}  // namespace

TEST(Errors, ShapeMismatchInEveryBinaryOp) {
  Tensor a = Tensor::ones(ctx(), {3, 4}), b = Tensor::ones(ctx(), {5});
  std::vector<std::pair<const char*, Tensor (*)(const Tensor&, const Tensor&)>> ops = {
      {"add", add},         {"sub", sub},         {"mul", mul}, {"div", div}, {"pow", pow},
      {"maximum", maximum}, {"minimum", minimum}, {"eq", eq},   {"ne", ne},   {"lt", lt},
      {"le", le},           {"gt", gt},           {"ge", ge}};
  for (auto& [name, op] : ops) expect_error(ErrorKind::Shape, [&] { op(a, b); }, {name, "[3, 4]", "[5]"}, name);
  expect_error(ErrorKind::Shape, [&] { where(Tensor::ones(ctx(), {2}, DType::u32), a, a); }, {"where"}, "where");
  expect_error(ErrorKind::Shape, [&] { a + Tensor::ones(ctx(), {2, 4, 1}); }, {"do not broadcast"}, "3-D");
}

TEST(Errors, MatmulShapes) {
  Tensor a = Tensor::ones(ctx(), {3, 4}), b = Tensor::ones(ctx(), {5, 2});
  expect_error(ErrorKind::Shape, [&] { a.matmul(b); }, {"matmul", "[3, 4]", "[5, 2]", "4 vs 5"}, "inner");
  expect_error(
      ErrorKind::Shape, [&] { matmul(Tensor::ones(ctx(), {2, 3, 4}), Tensor::ones(ctx(), {3, 4, 2})); }, {"batch"},
      "batch");
  expect_error(ErrorKind::Shape, [&] { matmul(Tensor::full(ctx(), {}, 1), a); }, {"rank"}, "scalar");
  expect_error(ErrorKind::DType, [&] { matmul(a.cast(DType::i32), b.cast(DType::i32)); }, {"f32"}, "int matmul");
}

TEST(Errors, InvalidAxes) {
  Tensor x = Tensor::ones(ctx(), {2, 3});
  expect_error(ErrorKind::Shape, [&] { x.sum({2}); }, {"sum", "axis 2", "rank 2"}, "sum");
  expect_error(ErrorKind::Shape, [&] { x.sum({0, -2}); }, {"twice"}, "duplicate");
  expect_error(ErrorKind::Shape, [&] { x.softmax(-3); }, {"axis -3"}, "softmax");
  expect_error(ErrorKind::Shape, [&] { x.argmax(5); }, {"argmax"}, "argmax");
  expect_error(ErrorKind::Shape, [&] { x.permute({0, 0}); }, {"twice"}, "permute");
  expect_error(ErrorKind::Shape, [&] { x.slice(4, 0, 1); }, {"slice"}, "slice");
  expect_error(ErrorKind::Shape, [&] { x.reshape({4, -1}); }, {"reshape", "[2, 3]"}, "reshape");
  expect_error(ErrorKind::Shape, [&] { x.expand({4, 3}); }, {"expand"}, "expand");
  expect_error(ErrorKind::Shape, [&] { x.squeeze(0); }, {"squeeze"}, "squeeze");
  expect_error(ErrorKind::Shape, [&] { concat({x, x}, 2); }, {"concat"}, "concat");
}

TEST(Errors, RankAboveEight) {
  expect_error(ErrorKind::Shape, [&] { Tensor::zeros(ctx(), Shape(9, 1)); }, {"rank 9", "≤ 8"}, "zeros");
  Tensor x = Tensor::zeros(ctx(), Shape(8, 1));
  expect_error(ErrorKind::Shape, [&] { x.unsqueeze(0); }, {"rank"}, "unsqueeze");
  expect_error(ErrorKind::Shape, [&] { x.reshape(Shape(9, 1)); }, {"rank"}, "reshape");
}

TEST(Errors, DTypeMismatch) {
  Tensor f = Tensor::ones(ctx(), {3}), i = Tensor::ones(ctx(), {3}, DType::i32);
  expect_error(ErrorKind::DType, [&] { f + i; }, {"add", "f32[3]", "i32[3]", "cast"}, "add");
  expect_error(ErrorKind::DType, [&] { where(i, f, i); }, {"where"}, "where");
  expect_error(ErrorKind::DType, [&] { i.sqrt(); }, {"sqrt", "i32"}, "sqrt");
  expect_error(ErrorKind::DType, [&] { gather(f, 0, f); }, {"i32"}, "gather");
  expect_error(
      ErrorKind::DType, [&] { scatter_add(f, 0, Tensor::zeros(ctx(), {3}, DType::i32), i); }, {"dtype"}, "scatter");
  expect_error(ErrorKind::DType, [&] { f.to_vector<int32_t>(); }, {"to_vector"}, "to_vector");
  expect_error(ErrorKind::DType, [&] { Tensor::uniform(ctx(), {2}, 1, 0, 1, DType::i32); }, {"uniform"}, "uniform");
}

TEST(Errors, TensorLargerThanTheDeviceAllows) {
  int64_t too_many = int64_t(ctx()->limits().max_storage_buffer_binding_size / 4) + 1;
  expect_error(
      ErrorKind::LimitExceeded, [&] { Tensor::zeros(ctx(), {too_many}); }, {"maxStorageBufferBindingSize", "smaller"},
      "one past the binding limit");
  expect_error(
      ErrorKind::LimitExceeded, [&] { Tensor::zeros(ctx(), {1 << 20, 1 << 20}); }, {"[1048576, 1048576]"}, "huge");
  // The context is still usable.
  EXPECT_EQ(Tensor::ones(ctx(), {2}).to_vector<float>(), std::vector<float>(2, 1.0f));
}

TEST(Errors, ShaderCompileErrorsNameTheKernel) {
  expect_error(
      ErrorKind::ShaderCompile,
      [&] { ctx()->kernel("@compute @workgroup_size(1) fn broken() { let x = ; }", "broken"); }, {"broken", "source"},
      "syntax error");
  EXPECT_EQ(Tensor::ones(ctx(), {2}).sum().to_vector<float>()[0], 2.0f);  // nothing sticky left behind
}

TEST(Errors, EmptyTensorOperand) {
  Tensor empty;
  expect_error(ErrorKind::Value, [&] { empty.context(); }, {"empty"}, "context of empty");
  expect_error(ErrorKind::Value, [&] { add(empty, Tensor::ones(ctx(), {1})); }, {"add"}, "add with empty");
}

// A device out of memory: the pool's free buffers go back to the device and the allocation is
// tried once more; only when that fails too is it an error (naming the size and the fix).
TEST(Errors, OutOfMemoryRetriesAfterThePoolsFreeBuffers) {
  auto own = gpu::Context::create({.quiet = true});
  {
    Tensor cached = Tensor::zeros(own, {1 << 20});
  }  // 4 MiB, back in the pool
  own->sync();
  ASSERT_GT(own->pool_stats().pooled_bytes, 0u);
  gpu::ContextTesting::fail_allocations(*own, 1);
  Tensor x = Tensor::full(own, {3 << 20}, 2.0);  // 12 MiB: its first try fails, the retry works
  EXPECT_EQ(x.to_vector<float>()[5], 2.0f);
  EXPECT_EQ(own->pool_stats().pooled_bytes, 0u) << "the pool was not emptied before the retry";
  {
    Tensor again = Tensor::zeros(own, {1 << 20});
  }
  own->sync();
  gpu::ContextTesting::fail_allocations(*own, 2);
  expect_error(
      ErrorKind::OutOfMemory, [&] { Tensor::zeros(own, {5 << 20}); }, {"20.00 MiB", "free tensors"},
      "out of memory twice");
  Tensor small = Tensor::ones(own, {16});  // the device still works
  EXPECT_EQ(small.to_vector<float>()[0], 1.0f);
}

TEST(Errors, DeviceLossFailsEveryLaterCall) {
  auto own = gpu::Context::create({.quiet = true});
  Tensor x = Tensor::ones(own, {16});
  Tensor y = x * 2.0;
  EXPECT_EQ(y.to_vector<float>()[0], 2.0f);
  Tensor pending = y + 1.0;  // recorded, never submitted
  gpu::ContextTesting::destroy_device(*own);
  EXPECT_TRUE(own->device_lost());
  expect_error(ErrorKind::DeviceLost, [&] { y.to_vector<float>(); }, {"lost", "new Context"}, "read after loss");
  expect_error(ErrorKind::DeviceLost, [&] { pending.to_vector<float>(); }, {"lost"}, "pending read");
  expect_error(ErrorKind::DeviceLost, [&] { x + 1.0; }, {"lost"}, "new op");
  expect_error(ErrorKind::DeviceLost, [&] { Tensor::zeros(own, {4}); }, {"lost"}, "new tensor");
  expect_error(ErrorKind::DeviceLost, [&] { own->sync(); }, {"lost"}, "sync");
  // Other contexts are unaffected.
  EXPECT_EQ(Tensor::ones(ctx(), {3}).sum().to_vector<float>()[0], 3.0f);
}

TEST(Errors, AliasedWritableBindingIsRefusedNotAborted) {
  // wgpu-native aborts the whole process on this at submit; the gpu layer must refuse it first.
  auto buf = ctx()->alloc(64);
  auto k = ctx()->kernel(
      "@group(0) @binding(0) var<storage, read_write> a: array<f32>;\n"
      "@group(0) @binding(1) var<storage, read> b: array<f32>;\n"
      "@compute @workgroup_size(1) fn main() { a[0] = b[1]; }",
      "main");
  expect_error(
      ErrorKind::Value, [&] { ctx()->dispatch(k, {buf.get(), buf.get()}, {}, {1, 1, 1}); }, {"aliasing", "main"},
      "aliased");
  EXPECT_EQ(Tensor::ones(ctx(), {2}).sum().to_vector<float>()[0], 2.0f);
}
