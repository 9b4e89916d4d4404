"""What a document filter (`cuerag.retrieval.filters.DocFilter`) selects in one graph snapshot.

A subset is the matching documents' chunks, the units those chunks hold and the entities those
units mention. Every retrieval step stays inside it: the store's searches carry it as a Qdrant
filter (chunks by their `doc_id` payload; units and entities, which documents share, by point id),
and the graph walk, the title links, the lexical channel and the dense fill skip what lies outside.
A unit shared with a document outside the subset is taken, but only its chunks inside are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuerag.graph.catalog import DocumentTable
from cuerag.graph.schema import CHUNKS, ENTITIES, UNITS
from cuerag.graph.snapshot import Graph
from cuerag.retrieval.filters import DocFilter, matching
from cuerag.store.base import PointFilter


@dataclass(frozen=True)
class Subset:
    """What a filter selects in one snapshot: a mask per node kind, and the store filters."""

    doc_ids: tuple[str, ...]
    chunks: np.ndarray  # bool, per chunk position
    units: np.ndarray
    entities: np.ndarray
    where: dict[str, PointFilter]  # per collection kind

    @property
    def empty(self) -> bool:
        return not self.doc_ids

    def has_chunk(self, c: int) -> bool:
        return bool(self.chunks[c])

    def has_unit(self, u: int) -> bool:
        return bool(self.units[u])

    def has_entity(self, e: int) -> bool:
        return bool(self.entities[e])


def _by_id(ids: list[str], mask: np.ndarray) -> PointFilter:
    """Points by id: those inside, or those outside when fewer (the filter stays at most half the
    snapshot's size; points the snapshot does not hold are skipped after the search anyway)."""
    inside = np.flatnonzero(mask)
    if len(inside) <= len(ids) - len(inside):
        return PointFilter(ids=tuple(ids[i] for i in inside))
    return PointFilter(exclude_ids=tuple(ids[i] for i in np.flatnonzero(~mask)))


def select(graph: Graph, table: DocumentTable, filter: DocFilter) -> Subset:
    """The subset of a snapshot that the filter selects (`empty` when it selects no document)."""
    docs = matching(table.infos, filter)
    chunks = np.zeros(len(graph.chunk_ids), dtype=bool)
    units = np.zeros(len(graph.unit_ids), dtype=bool)
    entities = np.zeros(len(graph.entity_ids), dtype=bool)
    for doc in docs:
        for c in table.positions[doc.doc_id]:
            chunks[c] = True
            for u in graph.chunk_units[c]:
                if not units[u]:
                    units[u] = True
                    entities[graph.unit_entities[u]] = True
    doc_ids = tuple(d.doc_id for d in docs)
    return Subset(
        doc_ids=doc_ids,
        chunks=chunks,
        units=units,
        entities=entities,
        where={
            CHUNKS: PointFilter(doc_ids=doc_ids),
            UNITS: _by_id(graph.unit_ids, units),
            ENTITIES: _by_id(graph.entity_ids, entities),
        },
    )
