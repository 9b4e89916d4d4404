#!/usr/bin/env bash
# Creates .venv and installs the project; `setup.sh dev` adds the dev tools, the tests' local
# LLM server and the npm clients of tests/clients (node and npm must be installed). Safe to run
# again: it only installs what is missing.
# - torch comes first and pinned, so pip takes the CPU build from local disk instead of resolving
#   an unpinned torch to a multi-GB CUDA build.
# - llama-cpp-python (dev only) compiles llama.cpp from source (~6-10 min on 2 cores). It is built
#   for a portable AVX2 baseline: a -march=native build used AMX instructions that this machine's
#   VM advertises but does not run (the server died with SIGILL on its first request).
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
if [ "${1:-}" = "dev" ]; then
  if ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
    # Built on its own, bypassing pip's wheel cache, which may hold a -march=native build.
    # Keep the version in step with pyproject.toml's dev extra.
    echo "building llama-cpp-python from source (several minutes)…" >&2
    CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF}" \
      .venv/bin/python -m pip install --quiet --no-cache-dir "llama-cpp-python[server]==0.3.36"
  fi
  .venv/bin/python -m pip install --quiet -e ".[dev]"
  # The MCP clients nobody here wrote (Inspector CLI, TypeScript SDK), the conformance suite and
  # the bundle tool, as pinned by tests/clients/package-lock.json.
  if ! (cd tests/clients && npm ls --silent >/dev/null 2>&1); then
    (cd tests/clients && npm ci --silent --no-audit --no-fund)
  fi
else
  .venv/bin/python -m pip install --quiet -e .
fi
