"""The vector-store contract, run against both embedded backends."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from cuerag.errors import StoreError
from cuerag.store.base import StoredPoint, VectorStore
from cuerag.store.edge_store import EdgeStore
from cuerag.store.qdrant_client_store import QdrantClientStore

DIM = 4
OPENERS: dict[str, Callable[[Path], VectorStore]] = {
    "edge": EdgeStore,
    "local": QdrantClientStore.local,
}


@pytest.fixture(params=sorted(OPENERS))
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def store(backend: str, store_dir: Path) -> Iterator[VectorStore]:
    s = OPENERS[backend](store_dir)
    yield s
    s.close()


def unit(angle_deg: float) -> np.ndarray:
    """A unit vector in the plane of the first two axes, `angle_deg` away from the first axis."""
    a = math.radians(angle_deg)
    v = np.zeros(DIM, dtype=np.float32)
    v[0], v[1] = math.cos(a), math.sin(a)
    return v


QUERY = unit(0)
ANGLES = [10, 80, 30, 170, 55, 120, 0]  # cosines with QUERY: a known order


def make_points(angles: list[float] = ANGLES) -> list[StoredPoint]:
    return [
        StoredPoint(id=str(uuid.uuid4()), payload={"i": i, "angle": a, "tags": ["x", "y"]}, vector=unit(a))
        for i, a in enumerate(angles)
    ]


@pytest.fixture
def filled(store: VectorStore) -> tuple[VectorStore, list[StoredPoint]]:
    store.create_collection("points", DIM)
    points = make_points()
    store.upsert("points", points)
    return store, points


def test_create_list_has(store: VectorStore) -> None:
    assert store.list_collections() == []
    assert not store.has_collection("a")
    store.create_collection("b", DIM)
    store.create_collection("a", 8)
    assert store.list_collections() == ["a", "b"]
    assert store.has_collection("a") and store.has_collection("b")
    assert store.collection_dim("a") == 8
    assert store.collection_dim("b") == DIM
    assert store.count("a") == 0


def test_create_existing_collection_keeps_its_points(filled) -> None:
    store, points = filled
    store.create_collection("points", DIM)
    assert store.count("points") == len(points)


def test_upsert_and_count(filled) -> None:
    store, points = filled
    assert store.count("points") == len(points)
    store.upsert("points", [])  # no-op
    assert store.count("points") == len(points)


def test_upsert_same_id_replaces(filled) -> None:
    store, points = filled
    replaced = StoredPoint(id=points[0].id, payload={"i": 99}, vector=unit(90))
    store.upsert("points", [replaced])
    assert store.count("points") == len(points)
    (got,) = store.retrieve("points", [points[0].id], with_vectors=True)
    assert got.payload == {"i": 99}
    assert np.allclose(got.vector, unit(90), atol=1e-6)


def test_search_orders_by_score(filled) -> None:
    store, points = filled
    hits = store.search("points", QUERY, limit=len(points))
    by_cosine = sorted(range(len(ANGLES)), key=lambda i: -math.cos(math.radians(ANGLES[i])))
    assert [h.id for h in hits] == [points[i].id for i in by_cosine]
    assert [h.payload["i"] for h in hits] == by_cosine
    for h in hits:
        assert h.score == pytest.approx(math.cos(math.radians(h.payload["angle"])), abs=1e-5)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_search_limit(filled) -> None:
    store, points = filled
    hits = store.search("points", QUERY, limit=3)
    assert [h.payload["angle"] for h in hits] == [0, 10, 30]
    assert len(store.search("points", QUERY, limit=100)) == len(points)


def test_search_with_unnormalised_query_is_cosine(filled) -> None:
    store, _ = filled
    hits = store.search("points", QUERY * 5.0, limit=2)
    assert [h.payload["angle"] for h in hits] == [0, 10]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)


def test_retrieve_with_and_without_vectors(filled) -> None:
    store, points = filled
    wanted = [points[2].id, points[5].id, str(uuid.uuid4())]  # the last one does not exist
    got = {p.id: p for p in store.retrieve("points", wanted, with_vectors=True)}
    assert set(got) == {points[2].id, points[5].id}
    for p in (points[2], points[5]):
        assert got[p.id].payload == p.payload
        assert got[p.id].vector is not None
        assert got[p.id].vector.dtype == np.float32
        assert np.allclose(got[p.id].vector, p.vector, atol=1e-6)
    bare = store.retrieve("points", [points[2].id])
    assert [p.vector for p in bare] == [None]
    assert store.retrieve("points", []) == []


@pytest.mark.parametrize("with_vectors", [True, False])
def test_scroll_over_several_pages(filled, with_vectors: bool) -> None:
    store, points = filled
    seen = list(store.scroll("points", with_vectors=with_vectors, batch=3))
    assert len(seen) == len(points)  # 7 points: pages of 3, 3 and 1
    assert sorted(p.id for p in seen) == sorted(p.id for p in points)
    originals = {p.id: p for p in points}
    for p in seen:
        assert p.payload == originals[p.id].payload
        if with_vectors:
            assert np.allclose(p.vector, originals[p.id].vector, atol=1e-6)
        else:
            assert p.vector is None


def test_scroll_exact_multiple_of_batch(store: VectorStore) -> None:
    store.create_collection("six", DIM)
    points = make_points(ANGLES[:6])
    store.upsert("six", points)
    assert sorted(p.id for p in store.scroll("six", batch=3)) == sorted(p.id for p in points)
    assert sorted(p.id for p in store.scroll("six", batch=1)) == sorted(p.id for p in points)


def test_scroll_empty_collection(store: VectorStore) -> None:
    store.create_collection("empty", DIM)
    assert list(store.scroll("empty", batch=3)) == []


def test_delete(filled) -> None:
    store, points = filled
    gone = [points[6].id, points[0].id]  # the two nearest to QUERY
    store.delete("points", gone)
    assert store.count("points") == len(points) - 2
    assert store.retrieve("points", gone) == []
    hits = store.search("points", QUERY, limit=len(points))
    assert len(hits) == len(points) - 2
    assert not set(gone) & {h.id for h in hits}
    assert hits[0].payload["angle"] == 30
    store.delete("points", [])  # no-op
    store.delete("points", [str(uuid.uuid4())])  # unknown id: no-op
    assert store.count("points") == len(points) - 2


def test_collections_are_independent_and_drop(filled) -> None:
    store, points = filled
    store.create_collection("other", DIM)
    store.upsert("other", make_points([45]))
    assert store.count("other") == 1
    assert store.count("points") == len(points)
    store.drop_collection("other")
    assert store.list_collections() == ["points"]
    assert not store.has_collection("other")
    assert store.count("points") == len(points)
    # A dropped name can be created again, empty.
    store.create_collection("other", DIM)
    assert store.count("other") == 0


def test_reopen_after_close_keeps_data(backend: str, store_dir: Path) -> None:
    first = OPENERS[backend](store_dir)
    first.create_collection("points", DIM)
    points = make_points()
    first.upsert("points", points)
    first.delete("points", [points[3].id])
    first.close()

    second = OPENERS[backend](store_dir)
    try:
        assert second.list_collections() == ["points"]
        assert second.collection_dim("points") == DIM
        assert second.count("points") == len(points) - 1
        got = {p.id: p for p in second.scroll("points", with_vectors=True, batch=3)}
        assert set(got) == {p.id for p in points} - {points[3].id}
        for p in points:
            if p.id in got:
                assert got[p.id].payload == p.payload
                assert np.allclose(got[p.id].vector, p.vector, atol=1e-6)
        assert [h.payload["angle"] for h in second.search("points", QUERY, limit=2)] == [0, 10]
        second.upsert("points", make_points([90]))
        assert second.count("points") == len(points)
    finally:
        second.close()


def test_edge_store_reuses_a_closed_instance(store_dir: Path) -> None:
    store = EdgeStore(store_dir)
    store.create_collection("c", DIM)
    store.upsert("c", make_points([0, 45]))
    store.close()
    # The same object reopens its shards on the next call.
    assert store.count("c") == 2
    store.close()


def test_edge_store_refuses_a_second_opener(store_dir: Path) -> None:
    first = EdgeStore(store_dir)
    try:
        with pytest.raises(StoreError, match=r"open in process \d+.*CUERAG_QDRANT_URL"):
            EdgeStore(store_dir)
    finally:
        first.close()
    # Once the first store is closed the directory can be opened again.
    EdgeStore(store_dir).close()


def test_edge_store_lock_holds_across_processes(store_dir: Path) -> None:
    first = EdgeStore(store_dir)
    try:
        code = (
            "import sys\n"
            "from cuerag.store.edge_store import EdgeStore\n"
            "from cuerag.errors import StoreError\n"
            f"try:\n    EdgeStore(__import__('pathlib').Path({str(store_dir)!r}))\n"
            "except StoreError as e:\n    print(e); sys.exit(3)\n"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    finally:
        first.close()
    assert done.returncode == 3, done.stderr
    assert f"process {os.getpid()}" in done.stdout
