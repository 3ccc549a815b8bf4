// The launch seam: bindings read from the WGSL, what a launch refuses (count, dtype, views), the
// 32-bit parameter check, and views handed to the maps (a sliced kNN result) read correctly.
#include "kernels/launch.hpp"

#include "surfgrad/maps.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

// out[i] = a[i] + 2·b[i], i < n.
const char* kAxpy = R"(
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read> a: array<f32>;   // first operand
// @group(0) @binding(9) var<storage, read> commented_out: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<vec2<f32>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= arg(0u)) { return; }
  out[i] = a[i] + 2.0 * b[i / 2u][i % 2u];
}
)";

kernels::Program axpy() {
  return kernels::Program::generated(ctx(), "test|axpy", [] { return std::string(kAxpy); });
}

}  // namespace

TEST(Launch, BindingsAreReadFromTheSource) {
  auto all =
      gpu::declared_bindings(kernels::assemble(*ctx(), "tsne_attraction.wgsl", {{"K", "4"}, {"LANES", "16"}}, {}));
  ASSERT_EQ(all.size(), 9u) << "eight storage bindings and the parameter block";
  std::vector<gpu::KernelBinding> bindings;
  for (auto& b : all) {
    if (b.uniform)
      EXPECT_EQ(b.index, 8u) << "the parameter block follows the storage bindings";
    else
      bindings.push_back(b);
  }
  ASSERT_EQ(bindings.size(), 8u);
  EXPECT_EQ(bindings[0].name, "attract");
  EXPECT_EQ(bindings[0].element, "vec2<f32>");
  EXPECT_TRUE(bindings[0].writable);
  EXPECT_EQ(bindings[2].name, "nbr");
  EXPECT_EQ(bindings[2].element, "i32");
  EXPECT_FALSE(bindings[2].writable);
  EXPECT_EQ(bindings[7].name, "order");
  EXPECT_EQ(bindings[7].element, "u32");
  const auto& declared = axpy().kernel().storage_bindings();
  ASSERT_EQ(declared.size(), 3u) << "a binding in a comment is not a binding";
  EXPECT_EQ(declared[1].name, "a");
  EXPECT_EQ(declared[2].element, "vec2<f32>");
}

TEST(Launch, RunsAndChecksWhatIsBound) {
  auto k = axpy();
  Tensor a = Tensor::arange(ctx(), 0, 10), b = Tensor::full(ctx(), {10}, 0.5), out = Tensor::empty(ctx(), {10});
  k.launch({out, a, b}, {int64_t(10)}, {1, 1, 1});
  std::vector<float> got = out.to_vector<float>();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(got[size_t(i)], float(i) + 1.0f);

  expect_error(
      ErrorKind::Value, [&] { k.launch({out, a}, {int64_t(10)}, {1, 1, 1}); }, {"main", "2 tensors", "3 storage"},
      "too few tensors");
  expect_error(
      ErrorKind::DType, [&] { k.launch({out, a.cast(DType::i32), b}, {int64_t(10)}, {1, 1, 1}); },
      {"'a'", "f32", "i32[10]"}, "wrong dtype");
  Tensor big = Tensor::arange(ctx(), 0, 20);
  expect_error(
      ErrorKind::Value, [&] { k.launch({out, big.slice(0, 10, 20), b}, {int64_t(10)}, {1, 1, 1}); },
      {"'a'", "view", "offset 10"}, "a view with an offset");
  expect_error(
      ErrorKind::Value, [&] { k.launch({out, big.reshape({10, 2}).t(), b}, {int64_t(10)}, {1, 1, 1}); },
      {"'a'", "view"}, "a transposed view");
  expect_error(
      ErrorKind::Value, [&] { k.launch({out, Tensor(), b}, {int64_t(10)}, {1, 1, 1}); }, {"empty"}, "undefined");
}

// A probe's text reaches the compiler unchanged (no preamble, no common.wgsl): its own parameter
// block, its own refusals.
TEST(Launch, VerbatimKernelsRunAsWritten) {
  auto k = kernels::Program::verbatim(ctx(), R"(
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<uniform> own_meta: array<vec4<u32>, 64>;
@compute @workgroup_size(8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x < own_meta[0].x) { out[gid.x] = f32(gid.x) * 3.0; }
}
)");
  Tensor out = Tensor::zeros(ctx(), {8});
  k.launch({out}, {uint32_t(5)}, {1, 1, 1});
  std::vector<float> got = out.to_vector<float>();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(got[size_t(i)], i < 5 ? float(i) * 3.0f : 0.0f);
  EXPECT_THROW(kernels::Program::verbatim(ctx(), "fn main() { arg(0u); }"), Error) << "common.wgsl is not added";
}

TEST(Launch, ParametersMustFit32Bits) {
  expect_error(ErrorKind::LimitExceeded, [] { kernels::Param p(int64_t(1) << 33); }, {"32 bits"}, "2^33");
  expect_error(ErrorKind::LimitExceeded, [] { kernels::Param p(int64_t(-1) << 40); }, {"32 bits"}, "-2^40");
  EXPECT_EQ(kernels::Param(int64_t(-1)).word, 0xFFFFFFFFu) << "i32 −1";
  EXPECT_EQ(kernels::Param(1.5).word, 0x3FC00000u) << "f32 bits";
  EXPECT_EQ(kernels::Param(uint64_t(4294967295ull)).word, 0xFFFFFFFFu);
}

TEST(Launch, DenseCopiesOnlyViews) {
  Tensor x = Tensor::arange(ctx(), 0, 12).reshape({3, 4});
  EXPECT_TRUE(kernels::dense(x).shares_storage(x));
  Tensor rows = x.slice(0, 1, 3);  // contiguous, but starts at element 4
  Tensor d = kernels::dense(rows);
  EXPECT_FALSE(d.shares_storage(x));
  EXPECT_EQ(d.offset(), 0);
  EXPECT_EQ(d.to_vector<float>(), rows.to_vector<float>());
}

// A kNN result handed to t-SNE / UMAP as views (columns sliced from a longer list, rows from a
// larger array) gives the map of the same result held densely.
TEST(Launch, MapsReadKnnViewsCorrectly) {
  std::vector<int32_t> cluster(300);
  for (int i = 0; i < 300; ++i) cluster[size_t(i)] = i % 4;
  Tensor x = add(index_select(Tensor::normal(ctx(), {4, 20}, 1, 0, 5), 0, Tensor::from_vector(ctx(), cluster, {300})),
                 Tensor::normal(ctx(), {300, 20}, 2));
  TsneOptions opt;
  opt.perplexity = 10;
  opt.iterations = 60;
  int k = tsne_neighbours(opt.perplexity, 300);
  KnnResult wide = knn_exact(x, k + 7);
  KnnResult cols{wide.indices.slice(1, 0, k), wide.distances.slice(1, 0, k)};  // strided views
  KnnResult dense{cols.indices.contiguous(), cols.distances.contiguous()};
  ASSERT_FALSE(cols.indices.is_contiguous());
  std::vector<float> want = tsne(x, opt, {}, &dense).to_vector<float>();
  EXPECT_EQ(tsne(x, opt, {}, &cols).to_vector<float>(), want) << "column-sliced kNN views";
  // Row views: the lists as the second half of a larger array (offset N·k).
  KnnResult twice{concat({dense.indices, dense.indices}, 0), concat({dense.distances, dense.distances}, 0)};
  KnnResult rows{twice.indices.slice(0, 300, 600), twice.distances.slice(0, 300, 600)};
  ASSERT_NE(rows.indices.offset(), 0);
  EXPECT_EQ(tsne(x, opt, {}, &rows).to_vector<float>(), want) << "row-sliced kNN views";
  UmapOptions uopt;
  uopt.n_neighbors = 10;
  uopt.epochs = 30;
  KnnResult ucols{wide.indices.slice(1, 0, 10), wide.distances.slice(1, 0, 10)};
  KnnResult udense{ucols.indices.contiguous(), ucols.distances.contiguous()};
  EXPECT_EQ(umap(x, uopt, {}, &ucols).to_vector<float>(), umap(x, uopt, {}, &udense).to_vector<float>());
}
