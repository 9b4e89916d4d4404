"""Shared fixtures: the models are loaded once per session; every engine gets its own embedded
store under a fresh temporary directory; the sample corpus is indexed once per module where the
tests only read it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mcp import Client

import cuerag
from cuerag.config import Settings
from cuerag.engine.facade import CueRag
from cuerag.graph.schema import KINDS, collection_name
from cuerag.graph.snapshot import Graph
from cuerag.models.loading import Models, load_models

# The suite must not pick up a developer's CUERAG_* settings (a server URL would bypass the
# embedded store every test is meant to exercise).
for _key in [k for k in os.environ if k.startswith("CUERAG_")]:
    del os.environ[_key]

# The real LLM server fixture (`llm_server`, one per module that asks for it).
pytest_plugins = ["llm_server"]

SAMPLE_CORPUS = Path(cuerag.__file__).parent / "data" / "sample_corpus.json"
SAMPLE = "sample"
BACKENDS = ("edge", "local")

EngineFactory = Callable[..., CueRag]


@pytest.fixture(scope="session")
def models(tmp_path_factory: pytest.TempPathFactory) -> Models:
    # One intra-op thread: the suite encodes many tiny batches, where torch's thread pool costs
    # more than it gives, and on a busy 2-core machine it is many times slower than one thread.
    import torch

    torch.set_num_threads(1)
    # A data dir of the session's own: the precision calibration (cuerag.models.precision) is kept
    # there, not in the user's.
    return load_models(Settings(data_dir=tmp_path_factory.mktemp("models")))


@pytest.fixture(scope="session")
def sample_path() -> Path:
    return SAMPLE_CORPUS


@pytest.fixture
def make_engine(models: Models, tmp_path: Path) -> Iterator[EngineFactory]:
    """A factory of engines, each on its own store under this test's tmp dir."""
    engines: list[CueRag] = []

    def make(store: str = "edge", data_dir: Path | None = None) -> CueRag:
        data = data_dir or tmp_path / f"data-{store}-{len(engines)}"
        engine = CueRag(Settings(data_dir=data, store=store), models=models)  # type: ignore[arg-type]
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.close()


@pytest.fixture
def engine(make_engine: EngineFactory) -> CueRag:
    """A fresh engine on the default (qdrant-edge) store."""
    return make_engine()


def _indexed_sample(models: Models, tmp_path_factory: pytest.TempPathFactory, store: str) -> CueRag:
    engine = CueRag(
        Settings(data_dir=tmp_path_factory.mktemp(f"sample-{store}"), store=store),  # type: ignore[arg-type]
        models=models,
    )
    engine.index_paths(SAMPLE, [SAMPLE_CORPUS])
    return engine


@pytest.fixture(scope="module")
def sample_engine(models: Models, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CueRag]:
    """The sample corpus indexed once per module on the default store. Read-only."""
    engine = _indexed_sample(models, tmp_path_factory, "edge")
    yield engine
    engine.close()


@pytest.fixture(scope="module", params=BACKENDS)
def sample_engine_any(request: pytest.FixtureRequest, models: Models, tmp_path_factory: pytest.TempPathFactory):
    """The sample corpus indexed once per module and backend. Read-only."""
    engine = _indexed_sample(models, tmp_path_factory, request.param)
    yield engine
    engine.close()


# ---- helpers shared by the test modules --------------------------------------------------------


def notes_engine(
    models: Models, tmp_path_factory: pytest.TempPathFactory, corpus: str, notes: dict[str, str]
) -> Iterator[CueRag]:
    """For a module's fixture: an engine over a fresh store with `notes` (file name -> text)
    written to a folder and indexed as `corpus`, closed when the fixture ends."""
    folder = tmp_path_factory.mktemp(corpus)
    for name, text in notes.items():
        (folder / name).write_text(text, encoding="utf-8")
    engine = CueRag(Settings(data_dir=tmp_path_factory.mktemp("data")), models=models)
    engine.index_paths(corpus, [folder])
    yield engine
    engine.close()


def point_counts(engine: CueRag, corpus: str) -> dict[str, int]:
    """Points in each of a corpus's three collections, as the store reports them."""
    return {kind: engine.store.count(collection_name(corpus, kind)) for kind in KINDS}


def assert_graphs_equal(a: Graph, b: Graph, *, atol: float = 1e-6) -> None:
    """Same nodes (ids, texts, names), same edges, same vectors (to `atol`: a text embedded in
    another batch differs by bfloat16 rounding on CPUs that compute in it)."""
    for name in (
        "chunk_ids",
        "chunk_docs",
        "chunk_titles",
        "chunk_texts",
        "chunk_units",
        "unit_ids",
        "unit_texts",
        "unit_entities",
        "unit_chunks",
        "entity_ids",
        "entity_names",
        "entity_labels",
        "entity_units",
    ):
        assert getattr(a, name) == getattr(b, name), name
    for name in ("chunk_vectors", "unit_vectors"):
        va, vb = getattr(a, name), getattr(b, name)
        assert va.shape == vb.shape, name
        assert np.allclose(va, vb, atol=atol), name
    assert a.sizes == b.sizes


def server_env() -> dict[str, str]:
    """The environment for a server subprocess: no developer CUERAG_* settings, no hub access."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUERAG_")}
    env["HF_HUB_OFFLINE"] = "1"
    env["TOKENIZERS_PARALLELISM"] = "false"
    return env


async def call(client: Client, name: str, **args: Any) -> dict[str, Any]:
    """An MCP tool call that must succeed: its structured content."""
    result = await client.call_tool(name, args)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content is not None
    return result.structured_content


async def call_error(client: Client, name: str, **args: Any) -> str:
    """An MCP tool call that must fail: its error text."""
    result = await client.call_tool(name, args)
    assert result.is_error, f"{name} {args} succeeded: {result.structured_content}"
    text = result.content[0].text  # type: ignore[union-attr]
    assert isinstance(text, str)
    return text


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """The async tests run on asyncio, the loop the server runs on (module scope: the MCP
    sessions several test modules share are module fixtures)."""
    return "asyncio"
