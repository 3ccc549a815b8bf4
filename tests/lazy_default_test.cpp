// Lazy mode as the default (issue 36), and EagerScope, which keeps a thread's ops eager (the map
// path runs under one): the mode each reports, the dispatches an op makes inside and outside, a
// pending tensor handed to the map path, and the scope's reach (its thread only).
#include <cstdlib>
#include <cstring>
#include <thread>

#include "lazy_test_util.hpp"
#include "surfgrad/knn.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

bool eager_by_environment() {
  const char* e = std::getenv("SURFGRAD_EAGER");
  const char* l = std::getenv("SURFGRAD_LAZY");
  return (e && *e && std::strcmp(e, "0") != 0) || (l && std::strcmp(l, "0") == 0);
}

}  // namespace

TEST(LazyDefault, OnUnlessTheEnvironmentSaysEager) {
  // Reads the process's mode as set at start (no test leaves it changed: LazyScope restores).
  EXPECT_EQ(lazy_mode(), !eager_by_environment());
}

TEST(LazyDefault, EagerScopeDispatchesEachOpAndNests) {
  Tensor a = Tensor::from_vector(ctx(), std::vector<float>{1, 2, 3, 4}, {4});
  auto ops = [&] { (void)((a + 1.0f) * 2.0f); };
  uint64_t eager_dispatches = 0;
  {
    LazyScope eager(false);
    eager_dispatches = dispatches_of(ops);  // the ops and their scalar operands, one dispatch each
  }
  ASSERT_GE(eager_dispatches, 2u);
  LazyScope lazy(true);
  EXPECT_EQ(dispatches_of(ops), 0u);  // recorded
  {
    EagerScope outer;
    EXPECT_FALSE(lazy_mode());
    EXPECT_EQ(dispatches_of(ops), eager_dispatches);
    {
      EagerScope inner;
      EXPECT_FALSE(lazy_mode());
    }
    EXPECT_FALSE(lazy_mode());  // the inner scope's end leaves the outer's eager mode
  }
  EXPECT_TRUE(lazy_mode());
  EXPECT_EQ(dispatches_of(ops), 0u);
}

TEST(LazyDefault, EagerScopeReachesItsThreadOnly) {
  LazyScope lazy(true);
  EagerScope eager;
  bool other_thread_lazy = false;
  std::thread([&] { other_thread_lazy = lazy_mode(); }).join();
  EXPECT_TRUE(other_thread_lazy);
  EXPECT_FALSE(lazy_mode());
}

TEST(LazyDefault, APendingTensorHandedToTheMapPathIsComputedFirst) {
  // Points made lazily ((x - 1) * 3: a pending tree), then the kNN (eager inside): the same
  // lists as from the realised points.
  std::vector<float> host(64 * 5);
  for (size_t i = 0; i < host.size(); ++i) host[i] = float((i * 37) % 101) / 17.0f;
  Tensor x = Tensor::from_vector(ctx(), host, {64, 5});
  KnnResult from_pending, from_realised;
  {
    LazyScope lazy(true);
    Tensor p = (x - 1.0f) * 3.0f;
    from_pending = knn_exact(p, 7);
  }
  {
    LazyScope eager(false);
    from_realised = knn_exact((x - 1.0f) * 3.0f, 7);
  }
  EXPECT_EQ(from_pending.indices.to_vector<int32_t>(), from_realised.indices.to_vector<int32_t>());
  EXPECT_EQ(from_pending.distances.to_vector<float>(), from_realised.distances.to_vector<float>());
}
