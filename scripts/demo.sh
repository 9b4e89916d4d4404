#!/usr/bin/env bash
# Set up, then run the main job on the embedded defaults: index the bundled sample corpus and
# answer a multi-hop question, printing the chunks and the Q-Iter trace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export CUERAG_DATA_DIR="${CUERAG_DATA_DIR:-$PWD/.cuerag-data}"
.venv/bin/cuerag demo "$@"
