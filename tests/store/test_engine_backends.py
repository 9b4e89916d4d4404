"""The two embedded backends give the same graph and the same answers."""

from __future__ import annotations

import pytest
from conftest import SAMPLE, SAMPLE_CORPUS, assert_graphs_equal, point_counts

from cuerag.engine.facade import CueRag
from cuerag.engine.params import make_params
from cuerag.store.edge_store import EdgeStore
from cuerag.store.qdrant_client_store import QdrantClientStore

QUESTIONS = [
    "When did the 1979-80 European Cup winner win the FA Cup?",
    "Where was the manager of Nottingham Forest born?",
    "Who shared the Nobel Prize with Marie Curie and where was he born?",
]


@pytest.fixture(scope="module")
def engines(models, tmp_path_factory):
    from cuerag.config import Settings

    built = {}
    for store in ("edge", "local"):
        engine = CueRag(Settings(data_dir=tmp_path_factory.mktemp(store), store=store), models=models)
        engine.index_paths(SAMPLE, [SAMPLE_CORPUS])
        built[store] = engine
    yield built
    for engine in built.values():
        engine.close()


def test_settings_pick_the_backend(engines) -> None:
    assert isinstance(engines["edge"].store, EdgeStore)
    assert isinstance(engines["local"].store, QdrantClientStore)
    assert (engines["edge"].settings.data_dir / "qdrant-edge").is_dir()
    assert (engines["local"].settings.data_dir / "qdrant-local").is_dir()


def test_same_graph_and_point_counts(engines) -> None:
    edge, local = engines["edge"], engines["local"]
    assert edge.corpora() == local.corpora() == [SAMPLE]
    assert point_counts(edge, SAMPLE) == point_counts(local, SAMPLE)
    assert_graphs_equal(edge.graph(SAMPLE), local.graph(SAMPLE))


@pytest.mark.parametrize("question", QUESTIONS)
def test_qiter_gives_the_same_chunks(engines, question: str) -> None:
    edge = engines["edge"].query(SAMPLE, question)
    local = engines["local"].query(SAMPLE, question)
    assert [h.chunk_id for h in edge.chunks] == [h.chunk_id for h in local.chunks]
    assert len(edge.chunks) == 5
    assert [h.score for h in edge.chunks] == pytest.approx([h.score for h in local.chunks], abs=1e-5)
    assert edge.trace is not None and local.trace is not None
    assert [a.entity_id for a in edge.trace.anchors] == [a.entity_id for a in local.trace.anchors]
    assert [[p.unit_ids for p in d.paths] for d in edge.trace.depths] == [
        [p.unit_ids for p in d.paths] for d in local.trace.depths
    ]


@pytest.mark.parametrize("question", QUESTIONS)
def test_dense_gives_the_same_chunks(engines, question: str) -> None:
    params = make_params(top_n=10)
    edge = engines["edge"].query(SAMPLE, question, params=params, method="dense")
    local = engines["local"].query(SAMPLE, question, params=params, method="dense")
    assert [h.chunk_id for h in edge.chunks] == [h.chunk_id for h in local.chunks]
    assert [h.score for h in edge.chunks] == pytest.approx([h.score for h in local.chunks], abs=1e-5)
