"""The Claude Desktop bundle and the MCP registry entry: the manifest passes the official bundle
tool's validation (`mcpb validate`, npm), `packaging/mcpb/build.sh` packs a bundle holding the
manifest, the project file and the three packages; the manifest and server.json say the version
pyproject.toml says, and the manifest lists exactly the registry's tools with their titles."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
import zipfile
from pathlib import Path

import pytest

from tools import TOOLS

ROOT = Path(__file__).parent.parent.parent
MCPB = ROOT / "tests" / "clients" / "node_modules" / ".bin" / "mcpb"
MANIFEST = ROOT / "packaging" / "mcpb" / "manifest.json"
SERVER_JSON = ROOT / "server.json"
REGISTRY_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def _mcpb() -> Path:
    if shutil.which("node") is None or not MCPB.exists():
        pytest.fail("node and tests/clients/node_modules are needed: run `bash scripts/setup.sh dev`")
    return MCPB


def test_the_manifest_validates() -> None:
    done = subprocess.run([_mcpb(), "validate", MANIFEST], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "validation passes" in done.stdout


def test_the_manifest_says_what_the_code_does() -> None:
    manifest = json.loads(MANIFEST.read_text())
    assert manifest["version"] == VERSION
    # The tools the bundled server lists: not the step-by-step ones, which need --stepwise.
    assert manifest["tools"] == [{"name": t.name, "description": t.title} for t in TOOLS if not t.stepwise]
    # The host runs the server's own command with the folders the user picked.
    args = manifest["server"]["mcp_config"]["args"]
    assert args[args.index("--data-dir") + 1] == "${user_config.data_dir}"
    assert args[args.index("--allowed-root") + 1] == "${user_config.documents}"
    assert all(manifest["user_config"][k]["required"] for k in ("data_dir", "documents"))


def test_the_bundle_builds(tmp_path: Path) -> None:
    _mcpb()
    out = tmp_path / "cuerag.mcpb"
    done = subprocess.run(
        ["bash", ROOT / "packaging" / "mcpb" / "build.sh", out],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with zipfile.ZipFile(out) as bundle:
        names = set(bundle.namelist())
        assert json.loads(bundle.read("manifest.json")) == json.loads(MANIFEST.read_text())
    assert {
        "manifest.json",
        "pyproject.toml",
        "server/main.py",
        "tools/q_iter.py",
        "cuerag/data/sample_corpus.json",
    } <= names
    assert not [n for n in names if "__pycache__" in n or n.startswith(("tests/", ".venv"))]


def test_the_registry_entry_matches_the_package() -> None:
    entry = json.loads(SERVER_JSON.read_text())
    assert entry["$schema"] == REGISTRY_SCHEMA
    assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", entry["name"])
    assert 1 <= len(entry["description"]) <= 100  # the registry's limit
    assert entry["version"] == VERSION
    (package,) = entry["packages"]
    assert (package["registryType"], package["identifier"], package["version"]) == ("pypi", "cuerag", VERSION)
    assert package["transport"] == {"type": "stdio"}
    # The registry proves a PyPI package is the entry's by this line in its description (README).
    assert f"mcp-name: {entry['name']}" in (ROOT / "README.md").read_text()
    flags = [a["name"] for a in package["packageArguments"]]
    assert flags == ["--data-dir", "--allowed-root"]
