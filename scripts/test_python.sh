#!/usr/bin/env bash
# The Python package's tests (pytest, python/tests) against the package installed into
# .venv-python from this tree, then the example script. Runs on the default adapter (lavapipe
# when there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
python=$(bash scripts/python_env.sh | tail -1)
# From the repo root, `import surfgrad` is the installed package (python/ is not on sys.path).
run_pytest() {
  set +e
  "$python" -m pytest -q -p no:cacheprovider python/tests "$@"
  local rc=$?
  set -e
  if [ $rc = 5 ]; then echo "test_python.sh: pytest collected no tests" >&2; exit 1; fi
  [ $rc = 0 ] || exit $rc
}
run_pytest "$@"
# Once more on the OpenGL ES backend, as scripts/run_tests.sh does for the C++ suite.
if [ "${SURFGRAD_SKIP_GLES:-}" != 1 ]; then
  echo "--- the Python tests on the GLES backend ---"
  SURFGRAD_BACKEND=gles run_pytest "$@"
fi
MPLBACKEND=Agg "$python" python/examples/maps_and_training.py --quick
