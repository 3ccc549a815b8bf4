// Deferred GPU errors (gpu::Context::defer_errors, issue 36): the browser's synchronous tensor
// calls pop their error scopes without waiting, and the next read throws the first error under
// the label of the op that recorded it. Natively, wgpu-native builds catch their errors per thread
// (no scopes), so these tests open a real scope through the test hook: a shader module the
// implementation rejects, popped as a kernel build pops it.
#include "gpu/testing.hpp"
#include "surfgrad/error.hpp"
#include "surfgrad/gpu.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

const char* kRejected = "@compute @workgroup_size(1) fn main() { let x: f32 = no_such_function(); }";
const char* kAccepted = "@compute @workgroup_size(1) fn main() { }";

// A context of the test's own: settling an error empties the kernel caches and the pool.
gpu::ContextPtr own_context() { return gpu::Context::create({.quiet = true}); }

}  // namespace

TEST(DeferredErrors, ARejectedKernelIsThrownAtSettleNamedByItsOp) {
  auto c = own_context();
  const std::string label = "matmul of f32[2, 3] and f32[3, 4]";
  EXPECT_EQ(c->defer_errors(label), "");
  EXPECT_EQ(gpu::ContextTesting::build_in_scope(*c, kRejected), "");  // nothing reported yet
  EXPECT_EQ(c->defer_errors(""), label);
  try {
    c->settle_deferred_errors();
    FAIL() << "settle did not throw the deferred error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Device);
    EXPECT_NE(e.message().find(label + " (recorded earlier, run on the GPU before this read) failed: "),
              std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("no_such_function"), std::string::npos) << e.message();
  }
  c->settle_deferred_errors();  // thrown once
  // The context works as before: an op and a read.
  Tensor t = Tensor::from_vector(c, std::vector<float>{1, 2, 3}, {3});
  EXPECT_EQ((t * 2.0).to_vector<float>(), (std::vector<float>{2, 4, 6}));
}

TEST(DeferredErrors, TheFirstErrorIsThrownAndAcceptedKernelsSettleQuietly) {
  auto c = own_context();
  c->defer_errors("first op");
  EXPECT_EQ(gpu::ContextTesting::build_in_scope(*c, kAccepted), "");
  c->settle_deferred_errors();  // no error: nothing thrown
  EXPECT_EQ(gpu::ContextTesting::build_in_scope(*c, kAccepted), "");
  c->defer_errors("second op");
  EXPECT_EQ(gpu::ContextTesting::build_in_scope(*c, kRejected), "");
  c->defer_errors("third op");
  EXPECT_EQ(gpu::ContextTesting::build_in_scope(*c, kRejected), "");
  c->defer_errors("");
  try {
    c->settle_deferred_errors();
    FAIL() << "settle did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.message().rfind("second op (recorded earlier", 0), 0u) << e.message();
  }
}

TEST(DeferredErrors, WithoutALabelAScopeIsWaitedForAtOnce) {
  auto c = own_context();
  EXPECT_NE(gpu::ContextTesting::build_in_scope(*c, kRejected), "");  // reported now
  c->settle_deferred_errors();                                        // nothing kept
  EXPECT_EQ(gpu::ContextTesting::build_in_scope(*c, kAccepted), "");
}
