"""An index written by the commit before the layer packages (95b53c7) opens and answers the same.

The fixture holds that commit's stored points as it wrote them (payloads verbatim, vectors as
float32), not the store's files: Qdrant's files are preallocated (hundreds of MB on disk for a
15-document corpus) and the store library is the same before and after. What the move could break
is how payloads are read, which this test exercises through the real embedded store. The answers
were recorded by that commit (method, question → chunk ids, scores, citations)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import EngineFactory

from cuerag.graph.schema import collection_name
from cuerag.retrieval.results import Method
from cuerag.store.base import StoredPoint

FIXTURE = Path(__file__).parent.parent / "data" / "stored" / "index_v1.json"
# Query vectors are computed now, on whatever CPU runs the test (thread count and SIMD change the
# last bits): scores agree to well within this, rankings exactly.
SCORE_TOL = 2e-3


@pytest.fixture(scope="module")
def stored() -> dict:
    data: dict = json.loads(FIXTURE.read_text())
    return data


def _restore(engine_store, stored: dict) -> None:  # type: ignore[no-untyped-def]
    corpus = stored["corpus"]
    for kind in ("entities", "units", "chunks"):  # chunks last, as an index run writes them
        name = collection_name(corpus, kind)
        engine_store.create_collection(name, stored["dim"])
        points = [
            StoredPoint(
                id=p["id"],
                payload=p["payload"],
                vector=np.frombuffer(base64.b64decode(p["vector"]), dtype="<f4").copy(),
            )
            for p in stored["collections"][kind]
        ]
        engine_store.upsert(name, points)


def test_an_index_from_before_the_move_answers_the_same(make_engine: EngineFactory, stored: dict) -> None:
    engine = make_engine()
    _restore(engine.store, stored)
    corpus = stored["corpus"]
    assert engine.corpora() == [corpus]
    assert engine.info(corpus).chunks == len(stored["collections"]["chunks"])
    assert stored["answers"], "the fixture holds recorded answers"
    for key, expected in stored["answers"].items():
        method, question = key.split("|", 1)
        method_name: Method = method  # type: ignore[assignment]
        result = engine.query(corpus, question, method=method_name)
        got = [[c.chunk_id, c.score, c.model_dump(mode="json").get("citation")] for c in result.chunks]
        assert [g[0] for g in got] == [e[0] for e in expected], key
        assert [g[2] for g in got] == [e[2] for e in expected], key
        for (_, score, _), (_, want, _) in zip(got, expected, strict=True):
            assert score == pytest.approx(want, abs=SCORE_TOL), key
