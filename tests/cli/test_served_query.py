"""A CLI query beside a running server (issue 30 item 7): with another process serving the data
directory, `cuerag query` answers through it, with the same hits as that process's own engine,
and imports none of the engine's heavy code: no model library, no store, not the engine itself,
not even numpy. Most of them were imported before (698 modules; 447 without them), and imports are
most of such a query's time (docs/sharing.md, *Measured*). A test of the import list, so that an
eager import that creeps back fails here rather than in a user's wait. The first of those
imports, `cuerag`'s public names, are imported on first use: tested here too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SAMPLE, server_env

from cuerag import CueRag
from cuerag.cli.context import SAMPLE_QUESTION
from cuerag.engine.sharing.owner import Owner
from cuerag.engine.sharing.place import place_of

ROOT = Path(__file__).parent.parent.parent
# What a process that attaches must not import: the models' libraries, the store's, the engine
# (whose modules import the rest), and numpy (about a tenth of the attached query's time).
NOT_IMPORTED = (
    "torch",
    "sentence_transformers",
    "transformers",
    "spacy",
    "onnxruntime",
    "qdrant_edge",
    "qdrant_client",
    "tiktoken",
    "numpy",
    "cuerag.engine.facade",
    "cuerag.retrieval.retriever",
    "cuerag.communities",
)


@pytest.fixture(scope="module")
def served(sample_engine: CueRag) -> Iterator[CueRag]:
    """The sample corpus's engine (models loaded), serving its data directory from this process
    as a `cuerag-mcp` that opened it would."""
    place = place_of(sample_engine.settings.data_dir)
    owner = Owner(sample_engine, place)
    yield sample_engine
    owner.close()
    place.key_file.unlink(missing_ok=True)


def _imported(stderr: str) -> set[str]:
    """The modules a `python -X importtime` run imported (its lines: self | cumulative | name)."""
    return {line.split("|")[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_a_query_answers_through_the_server_without_importing_the_engine(served: CueRag) -> None:
    query = ["query", SAMPLE_QUESTION, "--corpus", SAMPLE, "--json"]
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cuerag", "--data-dir", str(served.settings.data_dir), *query],
        cwd=ROOT,
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    said = [line for line in run.stderr.splitlines() if not line.startswith("import time:")]
    assert f"using the index served by process {os.getpid()} (its models are loaded: nothing loads here)" in said
    assert not any("loading the models" in line for line in said), said

    hits = [(c["doc_id"], c["chunk_id"]) for c in json.loads(run.stdout)["chunks"]]
    local = served.query(SAMPLE, SAMPLE_QUESTION)
    assert hits and hits == [(c.doc_id, c.chunk_id) for c in local.chunks]

    imported = _imported(run.stderr)
    assert "cuerag.engine.sharing.remote" in imported  # the list is read right
    heavy = sorted(m for m in imported for top in NOT_IMPORTED if m == top or m.startswith(top + "."))
    assert not heavy, f"imported by a query answered by a server: {heavy}"


def test_the_public_names_are_imported_on_first_use() -> None:
    # `import cuerag` (which every `cuerag.*` import runs first) imports none of them; each name
    # is then the object its home module defines.
    check = (
        "import importlib, sys, cuerag\n"
        "assert 'cuerag.engine.facade' not in sys.modules and 'pydantic' not in sys.modules, sorted(sys.modules)\n"
        "for name in cuerag.__all__:\n"
        "    assert getattr(cuerag, name) is getattr(importlib.import_module(cuerag._HOMES[name]), name), name\n"
        "assert set(cuerag.__all__) == set(cuerag._HOMES) and set(cuerag.__all__) <= set(dir(cuerag))\n"
        "from cuerag import CueRag, open_engine\n"
        "try:\n"
        "    cuerag.NotAName\n"
        "except AttributeError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('an unknown name resolved')\n"
    )
    run = subprocess.run([sys.executable, "-c", check], cwd=ROOT, env=server_env(), capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
