#!/usr/bin/env bash
# The Python package in a project-local virtual environment (.venv-python): pinned build and
# test requirements (python/requirements-dev.txt), then surfgrad itself built from this tree.
# Idempotent: a second run only recompiles what changed (build folder build-python/, reused
# because the build runs without isolation, so CMake sees the same nanobind path every time).
# Prints the environment's python on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null  # compiler, CMake, Ninja, python3-venv, Mesa (Debian)
if [ ! -x .venv-python/bin/python ]; then python3 -m venv .venv-python; fi
.venv-python/bin/python -m pip install --quiet --upgrade "pip==26.3"
.venv-python/bin/python -m pip install --quiet -r python/requirements-dev.txt
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
.venv-python/bin/python -m pip install --quiet --no-build-isolation --no-deps .
echo .venv-python/bin/python
