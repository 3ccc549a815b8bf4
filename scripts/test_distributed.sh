#!/usr/bin/env bash
# surfgrad.distributed's tests (python/tests_distributed): the package in .venv-python
# (scripts/python_env.sh) plus Ray and pyarrow, pinned in python/requirements-distributed.txt,
# then pytest with local Ray clusters of 1, 2 and 4 worker processes on the default adapter
# (lavapipe without a GPU); ~5 minutes on two cores. SURFGRAD_LARGE=1 adds the 200,000 × 64
# recall test (its single-process baseline alone takes over 20 minutes there).
set -euo pipefail
cd "$(dirname "$0")/.."
python=$(bash scripts/python_env.sh | tail -1)
"$python" -m pip install --quiet -r python/requirements-distributed.txt
# Ray's local clusters on a shared machine: no usage reporting, no dashboard, a private temp folder.
export RAY_USAGE_STATS_ENABLED=0 RAY_DISABLE_DOCKER_CPU_WARNING=1
if [ -z "${RAY_TMPDIR:-}" ]; then
  RAY_TMPDIR=$(mktemp -d /tmp/surfgrad-ray.XXXXXX)
  trap 'rm -rf "$RAY_TMPDIR"' EXIT
fi
export RAY_TMPDIR
set +e
"$python" -m pytest -q -p no:cacheprovider -s python/tests_distributed "$@"
rc=$?
set -e
if [ $rc = 5 ]; then echo "test_distributed.sh: pytest collected no tests" >&2; exit 1; fi
[ $rc = 0 ] || exit $rc
# The example: 12,000 built-in 768-D points in four shards, mapped, its 10-NN accuracy checked.
"$python" python/examples/distributed_map.py --points 12000
