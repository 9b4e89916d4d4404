#!/usr/bin/env bash
# Creates .venv and installs the project with its dev tools. Safe to run again: it only installs
# what is missing. torch comes first and pinned, so pip takes the CPU build from local disk
# instead of resolving an unpinned torch to a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install --quiet "torch==2.13.0"
fi
.venv/bin/python -m pip install --quiet -e ".[dev]"
