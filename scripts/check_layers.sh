#!/usr/bin/env bash
# The layers point downward only (docs: DESIGN's layer table): a file of a lower layer in src/ must
# not include a private header of a layer above it. Instant (grep); run by scripts/run_tests.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
check() {  # check LAYER ABOVE...: no `#include "ABOVE/...` in src/LAYER
  local layer=$1
  shift
  local above
  above=$(IFS='|'; echo "$*")
  if grep -rnE "^#include \"($above)/" "src/$layer"; then
    echo "check_layers: src/$layer includes a header of a layer above it ($*): the edge must point downward" >&2
    status=1
  fi
}
check gpu kernels tensor autograd nn maps tiles cli demos io
check kernels tensor autograd nn maps tiles cli demos io
check tensor autograd nn maps tiles cli demos
exit $status
