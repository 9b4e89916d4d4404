"""The store contract the engine codes against. Point ids are UUID strings; vectors are
L2-normalised float32 and scores are cosine similarities."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # in annotations only: the points' types are read without loading numpy (a CLI query)
    import numpy as np


@dataclass(frozen=True)
class StoredPoint:
    """A point as written to or read from a collection."""

    id: str
    payload: dict[str, Any] = field(default_factory=dict)
    vector: np.ndarray | None = None


@dataclass(frozen=True)
class PointFilter:
    """Which points a search may return, as a Qdrant filter: every condition given must hold.
    `doc_ids`: the payload's `doc_id` is one of them (chunks carry it); `ids` / `exclude_ids`:
    the point id is among / not among them (units and entities, which several documents share,
    are selected by id); `levels`: the payload's `level` is one of them (a theme hierarchy's
    communities, `cuerag.graph.schema.ThemePayload`)."""

    doc_ids: tuple[str, ...] | None = None
    levels: tuple[int, ...] | None = None
    ids: tuple[str, ...] | None = None
    exclude_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hit:
    """A search result."""

    id: str
    score: float
    payload: dict[str, Any]


class VectorStore(Protocol):
    """What the engine needs from Qdrant, whatever runs it."""

    def list_collections(self) -> list[str]: ...

    def has_collection(self, name: str) -> bool: ...

    def create_collection(self, name: str, dim: int) -> None: ...

    def collection_dim(self, name: str) -> int: ...

    def drop_collection(self, name: str) -> None: ...

    def upsert(self, name: str, points: Sequence[StoredPoint]) -> None: ...

    def search(self, name: str, vector: np.ndarray, limit: int, *, where: PointFilter | None = None) -> list[Hit]: ...

    def retrieve(self, name: str, ids: Sequence[str], *, with_vectors: bool = False) -> list[StoredPoint]: ...

    def scroll(self, name: str, *, with_vectors: bool = False, batch: int = 2048) -> Iterator[StoredPoint]: ...

    def delete(self, name: str, ids: Sequence[str]) -> None: ...

    def count(self, name: str) -> int: ...

    def close(self) -> None: ...
