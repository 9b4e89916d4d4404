"""The same contract over `qdrant-client`: a Qdrant server by URL (scale-out), or the client's
pure-Python local mode (no Rust engine; fine for small corpora and for tests of this backend)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from qdrant_client import QdrantClient, models

from cuerag.store.base import Hit, PointFilter, StoredPoint


def _vector_of(raw: object) -> np.ndarray | None:
    if raw is None:
        return None
    if isinstance(raw, dict):
        raw = raw.get("")
    return None if raw is None else np.asarray(raw, dtype=np.float32)


def _filter(where: PointFilter | None) -> models.Filter | None:
    """The filter as qdrant-client's model (None: no condition)."""
    if where is None:
        return None
    must: list[models.Condition] = []
    if where.doc_ids is not None:
        must.append(models.FieldCondition(key="doc_id", match=models.MatchAny(any=list(where.doc_ids))))
    if where.levels is not None:
        must.append(models.FieldCondition(key="level", match=models.MatchAny(any=list(where.levels))))
    if where.ids is not None:
        must.append(models.HasIdCondition(has_id=list(where.ids)))
    must_not: list[models.Condition] = []
    if where.exclude_ids:
        must_not.append(models.HasIdCondition(has_id=list(where.exclude_ids)))
    return models.Filter(must=must or None, must_not=must_not or None)


class QdrantClientStore:
    """Collections in a Qdrant reached through qdrant-client."""

    def __init__(self, client: QdrantClient) -> None:
        self._client = client

    @classmethod
    def remote(cls, url: str, *, api_key: str | None) -> QdrantClientStore:
        return cls(QdrantClient(url=url, api_key=api_key, timeout=60))

    @classmethod
    def local(cls, path: Path) -> QdrantClientStore:
        return cls(QdrantClient(path=str(path)))

    def list_collections(self) -> list[str]:
        return sorted(c.name for c in self._client.get_collections().collections)

    def has_collection(self, name: str) -> bool:
        return self._client.collection_exists(name)

    def create_collection(self, name: str, dim: int) -> None:
        if self._client.collection_exists(name):
            return
        self._client.create_collection(
            name, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
        )

    def collection_dim(self, name: str) -> int:
        params = self._client.get_collection(name).config.params.vectors
        if isinstance(params, dict):
            params = params[""]
        assert params is not None
        return int(params.size)

    def drop_collection(self, name: str) -> None:
        self._client.delete_collection(name)

    def upsert(self, name: str, points: Sequence[StoredPoint]) -> None:
        if not points:
            return
        structs = [
            models.PointStruct(id=p.id, vector=np.asarray(p.vector, dtype=np.float32).tolist(), payload=p.payload)
            for p in points
        ]
        self._client.upsert(name, points=structs, wait=True)

    def search(self, name: str, vector: np.ndarray, limit: int, *, where: PointFilter | None = None) -> list[Hit]:
        response = self._client.query_points(
            name,
            query=np.asarray(vector, dtype=np.float32).tolist(),
            query_filter=_filter(where),
            limit=limit,
            with_payload=True,
        )
        return [Hit(id=str(p.id), score=float(p.score), payload=dict(p.payload or {})) for p in response.points]

    def retrieve(self, name: str, ids: Sequence[str], *, with_vectors: bool = False) -> list[StoredPoint]:
        if not ids:
            return []
        records = self._client.retrieve(name, ids=list(ids), with_payload=True, with_vectors=with_vectors)
        return [StoredPoint(id=str(r.id), payload=dict(r.payload or {}), vector=_vector_of(r.vector)) for r in records]

    def scroll(self, name: str, *, with_vectors: bool = False, batch: int = 2048) -> Iterator[StoredPoint]:
        offset = None
        while True:
            page, offset = self._client.scroll(
                name, limit=batch, offset=offset, with_payload=True, with_vectors=with_vectors
            )
            for r in page:
                yield StoredPoint(id=str(r.id), payload=dict(r.payload or {}), vector=_vector_of(r.vector))
            if offset is None:
                return

    def delete(self, name: str, ids: Sequence[str]) -> None:
        if ids:
            self._client.delete(name, points_selector=models.PointIdsList(points=list(ids)), wait=True)

    def count(self, name: str) -> int:
        return int(self._client.count(name, exact=True).count)

    def close(self) -> None:
        self._client.close()
