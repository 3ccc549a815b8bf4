#!/usr/bin/env bash
# The Python package's tests (pytest, python/tests) against the package installed into
# .venv-python from this tree, then the example script. Runs on the default adapter (lavapipe
# when there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
python=$(bash scripts/python_env.sh | tail -1)
# From the repo root, `import surfgrad` is the installed package (python/ is not on sys.path).
set +e
"$python" -m pytest -q -p no:cacheprovider python/tests "$@"
rc=$?
set -e
if [ $rc = 5 ]; then echo "test_python.sh: pytest collected no tests" >&2; exit 1; fi
[ $rc = 0 ] || exit $rc
MPLBACKEND=Agg "$python" python/examples/maps_and_training.py --quick
