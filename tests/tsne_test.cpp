// t-SNE: separated clusters in 50-D come out as separated groups in 2-D; deterministic for a
// seed; the perplexity/N check.
#include "surfgrad/maps.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

// 6 Gaussian clusters of 100 points in 50-D, centres 6σ apart.
void clusters(Tensor& x, Tensor& labels) {
  Tensor centres = Tensor::normal(ctx(), {6, 50}, 3, 0, 6);
  std::vector<int32_t> lab;
  for (int c = 0; c < 6; ++c)
    for (int i = 0; i < 100; ++i) lab.push_back(c);
  labels = Tensor::from_vector(ctx(), lab, {600});
  x = add(index_select(centres, 0, labels), Tensor::normal(ctx(), {600, 50}, 4));
}

}  // namespace

TEST(Tsne, SeparatesClustersAndIsDeterministic) {
  Tensor x, labels;
  clusters(x, labels);
  TsneOptions opt;
  opt.perplexity = 20;
  opt.iterations = 400;
  Tensor y = tsne(x, opt);
  ASSERT_EQ(y.shape(), Shape({600, 2}));
  for (float v : y.to_vector<float>()) ASSERT_TRUE(std::isfinite(v));
  MapQuality q = evaluate_map(x, y, labels);
  EXPECT_GE(q.knn_accuracy, 0.98) << "10-NN accuracy in 2-D";
  EXPECT_GT(q.knn_recall, 0.2) << "kNN recall@10";
  EXPECT_EQ(tsne(x, opt).to_vector<float>(), y.to_vector<float>()) << "same seed, same device: same map";
}

TEST(Tsne, TooFewPointsForThePerplexity) {
  Tensor x = Tensor::normal(ctx(), {50, 5}, 1);
  try {
    tsne(x, {.perplexity = 30});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Value);
    EXPECT_NE(std::string(e.what()).find("perplexity"), std::string::npos) << e.what();
  }
}
