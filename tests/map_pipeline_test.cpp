// map_points: the same map as the separate calls, option checks naming the option, progress
// and cancellation, non-finite detection, inputs no map can be drawn from.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "surfgrad/maps.hpp"
#include "test_util.hpp"

using namespace surfgrad;
using sgtest::ctx;

namespace {

// Three Gaussian clusters in 16-D: a map with structure, small enough for lavapipe.
Tensor clusters(int64_t n, uint64_t seed = 3) {
  Tensor centres = Tensor::normal(ctx(), {3, 16}, seed, 0, 4);
  std::vector<int32_t> which(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) which[size_t(i)] = int32_t(i % 3);
  Tensor labels = Tensor::from_vector(ctx(), which, {n});
  return add(index_select(centres, 0, labels), Tensor::normal(ctx(), {n, 16}, seed + 1)).contiguous();
}

MapOptions small_tsne() {
  MapOptions o;
  o.tsne.perplexity = 10;
  o.tsne.iterations = 120;
  o.tsne.exaggeration_iterations = 50;
  o.seed = 7;
  return o;
}

// Runs f and returns the surfgrad::Error's message, or "" if nothing was thrown.
std::string error_of(const std::function<void()>& f, ErrorKind want = ErrorKind::Value) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(int(e.kind()), int(want)) << e.what();
    return e.message();
  }
  return "";
}

}  // namespace

TEST(MapPipeline, TsneEqualsTheSeparateCalls) {
  Tensor x = clusters(300);
  MapOptions o = small_tsne();
  MapResult r = map_points(x, o);
  int k = tsne_neighbours(o.tsne.perplexity, 300);
  KnnResult nn = nearest_neighbours(x, k, o.seed);
  TsneOptions t = o.tsne;
  t.seed = o.seed;
  Tensor y = tsne(x, t, {}, &nn);
  EXPECT_EQ(r.k, k);
  EXPECT_FALSE(r.approximate_knn);
  EXPECT_EQ(r.embedding.to_vector<float>(), y.to_vector<float>()) << "the pipeline must be bitwise the separate calls";
  EXPECT_EQ(r.neighbours.indices.to_vector<int32_t>(), nn.indices.to_vector<int32_t>());
  ASSERT_GE(r.phases.size(), 3u);
  EXPECT_EQ(r.phases.back().name, "optimisation");
  EXPECT_GT(r.gpu_peak_bytes, 0u);
}

TEST(MapPipeline, UmapWithPcaEqualsTheSeparateCalls) {
  Tensor x = clusters(240);
  MapOptions o;
  o.method = MapMethod::Umap;
  o.umap.n_neighbors = 12;
  o.umap.epochs = 60;
  o.pca_components = 8;
  o.seed = 5;
  MapResult r = map_points(x, o);
  Tensor f = pca(x, 8, o.seed).scores;
  KnnResult nn = nearest_neighbours(f, 12, o.seed);
  UmapOptions u = o.umap;
  u.seed = o.seed;
  EXPECT_EQ(r.pca_components, 8);
  EXPECT_EQ(r.embedding.to_vector<float>(), umap(f, u, {}, &nn).to_vector<float>());
}

TEST(MapPipeline, AutomaticPcaOnCpuAdapters) {
  // -1 (automatic): 50 components past 20,000 points anywhere, and on CPU adapters 100 past 200
  // dimensions; an explicit count (0 included) wins everywhere.
  MapOptions o;
  EXPECT_EQ(map_pca_components(o, 10000, 784, false), 0);
  EXPECT_EQ(map_pca_components(o, 10000, 784, true), 100);
  EXPECT_EQ(map_pca_components(o, 1797, 64, true), 0);
  EXPECT_EQ(map_pca_components(o, 1797, 200, true), 0);
  EXPECT_EQ(map_pca_components(o, 1797, 201, true), 100);
  // Too few points for 100 components (a 40 × 2048 map on SwiftShader failed with 'at most min(N, D)').
  EXPECT_EQ(map_pca_components(o, 40, 2048, true), 0);
  EXPECT_EQ(map_pca_components(o, 200, 2048, true), 0);
  EXPECT_EQ(map_pca_components(o, 201, 2048, true), 100);
  EXPECT_EQ(map_pca_components(o, 30000, 784, false), 50);
  EXPECT_EQ(map_pca_components(o, 30000, 784, true), 50);
  o.pca_components = 0;
  EXPECT_EQ(map_pca_components(o, 10000, 784, true), 0);
  o.pca_components = 100;
  EXPECT_EQ(map_pca_components(o, 10000, 784, true), 100);
}

TEST(MapPipeline, KnnMethodIsHonoured) {
  // 300 points: Auto is exact; Descent is asked for by name, runs, and reports its sampled recall.
  Tensor x = clusters(300);
  MapOptions o = small_tsne();
  o.tsne.iterations = 20;
  o.knn = KnnMethod::Descent;
  o.recall_sample = 100;
  MapResult r = map_points(x, o);
  EXPECT_TRUE(r.approximate_knn);
  EXPECT_GT(r.knn_recall, 0.5);
  EXPECT_LE(r.knn_recall, 1.0);
  EXPECT_EQ(r.neighbours.indices.to_vector<int32_t>(),
            nearest_neighbours(x, r.k, o.seed, KnnMethod::Descent).indices.to_vector<int32_t>());
  o.knn = KnnMethod::Exact;
  MapResult e = map_points(x, o);
  EXPECT_FALSE(e.approximate_knn);
  EXPECT_EQ(e.neighbours.indices.to_vector<int32_t>(), knn_exact(x, e.k).indices.to_vector<int32_t>());
  // Auto: exact below kExactKnnLimit on every adapter; descent on CPU adapters past it.
  EXPECT_TRUE(knn_is_exact(*ctx(), 300, 16, KnnMethod::Auto));
  EXPECT_EQ(knn_is_exact(*ctx(), 100000, 50, KnnMethod::Auto), !ctx()->info().is_cpu);
  EXPECT_FALSE(knn_is_exact(*ctx(), 300, 16, KnnMethod::Descent));
}

TEST(MapPipeline, EveryOptionOutOfRangeIsAValueErrorNamingIt) {
  const int64_t n = 1000, d = 20;
  struct Case {
    std::string name;
    std::function<void(MapOptions&)> set;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<Case> cases = {
      {"perplexity (--perplexity)", [](MapOptions& o) { o.tsne.perplexity = 1; }},
      {"perplexity (--perplexity)", [](MapOptions& o) { o.tsne.perplexity = 50; }},  // k = 150 > 128
      {"perplexity (--perplexity)", [&](MapOptions& o) { o.tsne.perplexity = nan; }},
      {"iterations (--iterations, max_iter)", [](MapOptions& o) { o.tsne.iterations = 0; }},
      {"exaggeration_iterations (--exaggeration-iterations, early_exaggeration_iter)",
       [](MapOptions& o) { o.tsne.exaggeration_iterations = -1; }},
      {"early_exaggeration (--early-exaggeration)", [](MapOptions& o) { o.tsne.early_exaggeration = 0; }},
      {"learning_rate (--learning-rate)", [](MapOptions& o) { o.tsne.learning_rate = -3; }},
      {"max_step_norm (--max-step-norm)", [](MapOptions& o) { o.tsne.max_step_norm = -1; }},
      {"grid_spacing (--grid-spacing)", [](MapOptions& o) { o.tsne.grid_spacing = 0; }},
      {"pca_components (--pca)", [](MapOptions& o) { o.pca_components = 21; }},  // more than D
      {"pca_components (--pca)", [](MapOptions& o) { o.pca_components = -2; }},
      {"recall_sample (--recall-sample)", [](MapOptions& o) { o.recall_sample = -1; }},
      {"n_neighbors (--n-neighbors)", [](MapOptions& o) { o.method = MapMethod::Umap, o.umap.n_neighbors = 1; }},
      {"n_neighbors (--n-neighbors)", [](MapOptions& o) { o.method = MapMethod::Umap, o.umap.n_neighbors = 129; }},
      {"min_dist (--min-dist)", [](MapOptions& o) { o.method = MapMethod::Umap, o.umap.min_dist = -0.1; }},
      {"epochs (--epochs, n_epochs)", [](MapOptions& o) { o.method = MapMethod::Umap, o.umap.epochs = -4; }},
      {"learning_rate (--learning-rate)", [](MapOptions& o) { o.method = MapMethod::Umap, o.umap.learning_rate = 0; }},
      {"negative_sample_rate (--negative-sample-rate)",
       [](MapOptions& o) { o.method = MapMethod::Umap, o.umap.negative_sample_rate = 0; }},
  };
  for (const Case& c : cases) {
    MapOptions o;
    c.set(o);
    std::string msg = error_of([&] { validate(o, n, d); });
    EXPECT_NE(msg.find(c.name), std::string::npos) << "expected '" << c.name << "' in: " << msg;
  }
  MapOptions ok;
  EXPECT_NO_THROW(validate(ok, n, d));
  // Perplexity against N: (N − 1)/3, stated with the number of points.
  MapOptions big;
  big.tsne.perplexity = 40;
  std::string msg = error_of([&] { validate(big, 100, d); });
  EXPECT_NE(msg.find("33"), std::string::npos) << msg;
  EXPECT_NE(msg.find("100 points"), std::string::npos) << msg;
  // map_points checks before any work too.
  EXPECT_NE(error_of([&] { map_points(clusters(60), big); }).find("--perplexity"), std::string::npos);
}

TEST(MapPipeline, RefusesJobsLargerThanTheHostOrAdapter) {
  MapOptions o;
  // 30 million 768-D points: ~90 GB of input alone.
  std::string msg;
  try {
    check_map_fits(ctx(), o, 30'000'000, 768);
  } catch (const Error& e) {
    msg = e.what();
    EXPECT_TRUE(e.kind() == ErrorKind::OutOfMemory || e.kind() == ErrorKind::LimitExceeded) << e.what();
  }
  EXPECT_FALSE(msg.empty());
  EXPECT_NO_THROW(check_map_fits(ctx(), o, 5000, 768));
}

TEST(MapPipeline, ReportsPhasesAndTheEmbeddingDuringOptimisation) {
  std::vector<std::string> phases;
  int64_t drawn = 0;
  MapOptions o = small_tsne();
  map_points(clusters(300), o, [&](const MapProgressEvent& e) {
    if (phases.empty() || phases.back() != e.phase) phases.emplace_back(e.phase);
    if (e.embedding) {
      EXPECT_EQ(e.embedding->shape(0), 300);
      EXPECT_EQ(e.embedding->shape(1), 2);
      ++drawn;
    }
    return true;
  });
  EXPECT_EQ(phases, (std::vector<std::string>{"knn", "affinities", "optimise"}));
  EXPECT_EQ(drawn, 1 + 3);  // iteration 0, 50, 100, 120
}

TEST(MapPipeline, CancellationThrowsCancelled) {
  MapOptions o = small_tsne();
  int64_t last = -1;
  std::string msg = error_of(
      [&] {
        map_points(clusters(300), o, [&](const MapProgressEvent& e) {
          if (e.phase == "optimise") last = e.done;
          return !(e.phase == "optimise" && e.done >= 50);
        });
      },
      ErrorKind::Cancelled);
  EXPECT_NE(msg.find("cancelled"), std::string::npos) << msg;
  EXPECT_EQ(last, 50) << "no progress after the cancelling report";
  // At the first report (kNN's start) too.
  EXPECT_NE(error_of([&] { map_points(clusters(300), o, [](const MapProgressEvent&) { return false; }); },
                     ErrorKind::Cancelled),
            "");
}

TEST(MapPipeline, NonFiniteLayoutIsDetectedWithTheIteration) {
  MapOptions o = small_tsne();
  // Poison the positions at iteration 50 (as a diverging layout would): the check at 100 must
  // see it, and name that iteration.
  std::string msg = error_of([&] {
    map_points(clusters(300), o, [&](const MapProgressEvent& e) {
      if (e.embedding && e.done == 50)
        e.embedding->assign(Tensor::full(ctx(), {300, 2}, std::numeric_limits<double>::quiet_NaN()));
      return true;
    });
  });
  EXPECT_NE(msg.find("non-finite"), std::string::npos) << msg;
  EXPECT_NE(msg.find("iteration 100"), std::string::npos) << msg;
  EXPECT_NE(msg.find("standardise"), std::string::npos) << msg;
}

// Huge and tiny values are rescaled, not refused (input_scale_test.cpp).
TEST(MapPipeline, RefusesIdenticalPointsAndNonFiniteValues) {
  Tensor same = Tensor::full(ctx(), {200, 8}, 3.5);
  EXPECT_NE(error_of([&] { map_points(same, small_tsne()); }).find("identical"), std::string::npos);
  Tensor nan = Tensor::full(ctx(), {300, 16}, std::numeric_limits<double>::quiet_NaN());
  Tensor bad = concat({clusters(300), nan}, 0);
  EXPECT_NE(error_of([&] { map_points(bad, small_tsne()); }).find("NaN or infinity"), std::string::npos);
}

// MapOptions::init: the layout starts from the given positions (the "optimise" report at
// iteration 0 carries them), which are copied, not rescaled nor modified; bad ones are refused.
TEST(MapPipeline, StartsFromTheGivenInitialPositions) {
  Tensor x = clusters(300);
  std::vector<float> start(600);
  for (size_t i = 0; i < start.size(); ++i) start[i] = float(std::sin(0.37 * double(i)) * (i % 2 ? 2e-4 : 3e-3));
  for (MapMethod method : {MapMethod::Tsne, MapMethod::Umap}) {
    MapOptions o = small_tsne();
    o.method = method;
    o.umap.n_neighbors = 12;
    o.umap.epochs = 60;
    o.init = Tensor::from_vector(ctx(), start, {300, 2});
    std::vector<float> first;
    MapResult r = map_points(x, o, [&](const MapProgressEvent& e) {
      if (e.phase == "optimise" && e.done == 0) first = e.embedding->to_vector<float>();
      return true;
    });
    EXPECT_EQ(first, start) << "the layout must start from init, as given";
    EXPECT_EQ(o.init.to_vector<float>(), start) << "init must not be modified";
    MapOptions plain = o;
    plain.init = Tensor();
    std::vector<float> y = r.embedding.to_vector<float>(), y_plain = map_points(x, plain).embedding.to_vector<float>();
    EXPECT_NE(y, y_plain) << "a different start must give a different map";
    EXPECT_EQ(map_points(x, o).embedding.to_vector<float>(), y) << "deterministic from the same start";
    for (float v : y) ASSERT_TRUE(std::isfinite(v));

    o.init = Tensor::from_vector(ctx(), std::vector<float>(start.begin(), start.begin() + 598), {299, 2});
    EXPECT_NE(error_of([&] { map_points(x, o); }, ErrorKind::Shape).find("[300, 2]"), std::string::npos);
    std::vector<float> bad = start;
    bad[77] = std::numeric_limits<float>::quiet_NaN();
    o.init = Tensor::from_vector(ctx(), bad, {300, 2});
    EXPECT_NE(error_of([&] { map_points(x, o); }).find("NaN"), std::string::npos);
  }
}

// map_graph: the layout from a graph computed elsewhere is map_points' layout when given the same
// graph and start; a graph of the wrong k, or with an entry that is not another point, is refused.
TEST(MapPipeline, MapGraphIsTheLayoutOfAGivenGraph) {
  Tensor x = clusters(300);
  MapOptions o = small_tsne();
  o.init = Tensor::normal(ctx(), {300, 2}, 5, 0, 1e-4);
  MapResult r = map_points(x, o);
  MapResult g = map_graph(r.neighbours, o);
  EXPECT_EQ(g.embedding.to_vector<float>(), r.embedding.to_vector<float>());
  EXPECT_EQ(g.k, r.k);
  MapOptions u;
  u.method = MapMethod::Umap;
  u.umap.n_neighbors = 10;
  u.umap.epochs = 60;
  KnnResult nn10 = knn_exact(x, 10);
  MapResult a = map_graph(nn10, u), b = map_graph(nn10, u);  // seeded random start
  auto ya = a.embedding.to_vector<float>();
  EXPECT_EQ(ya, b.embedding.to_vector<float>());
  for (float v : ya) ASSERT_TRUE(std::isfinite(v));
  EXPECT_NE(error_of([&] { map_graph(nn10, o); }, ErrorKind::Shape).find("k = 30"), std::string::npos);
  std::vector<int32_t> idx = nn10.indices.to_vector<int32_t>();
  idx[25] = 2;  // row 2's own id
  KnnResult self{Tensor::from_vector(ctx(), idx, {300, 10}), nn10.distances};
  EXPECT_NE(error_of([&] { map_graph(self, u); }).find("[2, 5]"), std::string::npos);
}

TEST(MapPipeline, CosineMetricIgnoresEachRowsLengthAndRefusesZeroRows) {
  const int64_t n = 240;
  Tensor x = clusters(n);
  // Each row scaled by its own positive factor in [0.5, 4): the cosine neighbours are the same.
  Tensor scale = Tensor::uniform(ctx(), {n, 1}, 11, 0.5, 4);
  Tensor scaled = (x * scale).contiguous();
  MapOptions o = small_tsne();
  o.metric = MapMetric::Cosine;
  o.knn = KnnMethod::Exact;
  MapResult a = map_points(x, o), b = map_points(scaled, o);
  std::vector<int32_t> ia = a.neighbours.indices.to_vector<int32_t>(), ib = b.neighbours.indices.to_vector<int32_t>();
  size_t same = 0;
  for (size_t i = 0; i < ia.size(); ++i) same += ia[i] == ib[i];
  EXPECT_GT(double(same) / double(ia.size()), 0.98);
  // Euclidean neighbours of the scaled rows are not the same lists: the metric did something.
  MapOptions e = o;
  e.metric = MapMetric::Euclidean;
  std::vector<int32_t> ie = map_points(scaled, e).neighbours.indices.to_vector<int32_t>();
  size_t same_euclidean = 0;
  for (size_t i = 0; i < ia.size(); ++i) same_euclidean += ia[i] == ie[i];
  EXPECT_LT(double(same_euclidean) / double(ia.size()), 0.9);
  std::vector<float> rows = x.to_vector<float>();
  std::fill(rows.begin(), rows.begin() + 16, 0.0f);
  Tensor zero_row = Tensor::from_vector(ctx(), rows, {n, 16});
  EXPECT_NE(error_of([&] { map_points(zero_row, o); }).find("--metric cosine"), std::string::npos);
}

TEST(MapPipeline, UmapStartsFromRandomPositionsWhenAsked) {
  MapOptions o;
  o.method = MapMethod::Umap;
  o.umap.epochs = 30;
  o.seed = 5;
  Tensor x = clusters(150);
  std::vector<float> pca_start = map_points(x, o).embedding.to_vector<float>();
  o.pca_start = false;
  std::vector<float> random_start = map_points(x, o).embedding.to_vector<float>();
  std::vector<float> again = map_points(x, o).embedding.to_vector<float>();
  EXPECT_NE(pca_start, random_start);
  EXPECT_EQ(random_start, again);  // seeded
}
