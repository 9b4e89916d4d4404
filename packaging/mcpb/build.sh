#!/usr/bin/env bash
# Builds the Claude Desktop bundle (MCPB) with the official tool: the manifest beside this script,
# the project's pyproject.toml and README.md, and the three packages as committed. The bundle is
# of the "uv" server type: the host installs the dependencies (torch included) from pyproject.toml
# into an environment of its own on first start, so the bundle is small. Needs node and
# tests/clients/node_modules (`bash scripts/setup.sh dev`).
#   bash packaging/mcpb/build.sh [OUT.mcpb]      (default dist/cuerag.mcpb)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$(realpath -m "${1:-$root/dist/cuerag.mcpb}")"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp "$root/packaging/mcpb/manifest.json" "$root/pyproject.toml" "$root/README.md" "$stage/"
# Only tracked files: no caches, no local data.
git -C "$root" ls-files -z cuerag tools server | (cd "$root" && xargs -0 cp --parents -t "$stage")
mkdir -p "$(dirname "$out")"
cd "$root/tests/clients"
node_modules/.bin/mcpb validate "$stage/manifest.json"
node_modules/.bin/mcpb pack "$stage" "$out"
