#!/usr/bin/env bash
# The README's test command: set up, build, run the whole suite (CTest + GoogleTest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# The installed CMake package, as an outside project uses it (tests/consumer/).
bash scripts/test_consumer.sh
cd build
# The suite on the default adapter (Vulkan: lavapipe when there is no GPU), one process per test.
ctest --output-on-failure -j "$(nproc)" --timeout 900
# Once more on the OpenGL ES backend (WebGPU's compatibility path: no f16, no subgroups).
if [ "${SURFGRAD_SKIP_GLES:-}" != 1 ]; then
  echo "--- the same suite on the GLES backend ---"
  SURFGRAD_BACKEND=gles ./surfgrad_tests --gtest_brief=1
fi
