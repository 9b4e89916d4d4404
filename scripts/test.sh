#!/usr/bin/env bash
# Set up, then run the checks: lint, type check, and the test suite (real models, real embedded Qdrant).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
.venv/bin/ruff check cuerag tools server tests benchmarks
.venv/bin/ruff format --check cuerag tools server tests benchmarks
.venv/bin/mypy
.venv/bin/lint-imports
.venv/bin/python -m pytest -q "$@"
