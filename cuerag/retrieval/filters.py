"""Retrieval limited to part of a corpus: the filter a caller gives (`DocFilter`) and what it selects
in one graph snapshot (`Subset`).

A subset is the matching documents' chunks, the units those chunks hold and the entities those
units mention. Every retrieval step stays inside it: the store's searches carry it as a Qdrant
filter (chunks by their `doc_id` payload; units and entities, which documents share, by point id),
and the graph walk, the title links, the lexical channel and the dense fill skip what lies outside.
A unit shared with a document outside the subset is taken, but only its chunks inside are.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Annotated

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cuerag.errors import ArgumentProblem, InvalidArguments, UnknownDocumentIds
from cuerag.graph.catalog import DocumentInfo, DocumentTable
from cuerag.graph.schema import CHUNKS, ENTITIES, UNITS
from cuerag.graph.snapshot import Graph
from cuerag.store.base import PointFilter

_Text = Annotated[str, Field(min_length=1, max_length=256)]


class DocFilter(BaseModel):
    """Which documents to use; every condition given must hold."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    doc_ids: list[_Text] | None = Field(default=None, min_length=1, max_length=1000)
    path_prefix: _Text | None = None  # the document's source path starts with it
    path_glob: _Text | None = None  # fnmatch pattern on the source path (`*` also crosses `/`)
    tags: list[_Text] | None = Field(default=None, min_length=1, max_length=50)  # any of them

    def matches(self, doc: DocumentInfo) -> bool:
        if self.doc_ids is not None and doc.doc_id not in self.doc_ids:
            return False
        if self.path_prefix is not None and not doc.source.startswith(self.path_prefix.removeprefix("./")):
            return False
        if self.path_glob is not None and not fnmatchcase(doc.source, self.path_glob.removeprefix("./")):
            return False
        if self.tags is not None:
            wanted = {t.casefold() for t in self.tags}
            if not wanted & {t.casefold() for t in doc.tags}:
                return False
        return True

    def key(self) -> str:
        """The filter as canonical JSON (a cursor is bound to it)."""
        return self.model_dump_json(exclude_none=True)


def make_filter(
    *,
    doc_ids: list[str] | None = None,
    path_prefix: str | None = None,
    path_glob: str | None = None,
    tags: list[str] | None = None,
) -> DocFilter | None:
    """A filter from loose values (None when none is given), range errors as ParameterError."""
    given = {"doc_ids": doc_ids, "path_prefix": path_prefix, "path_glob": path_glob, "tags": tags}
    given = {k: v for k, v in given.items() if v}
    if not given:
        return None
    try:
        return DocFilter(**given)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = [
            ArgumentProblem(".".join(str(p) for p in e["loc"]), e["msg"], e.get("input"), show_got=False)
            for e in exc.errors()
        ]
        raise InvalidArguments("filter", problems) from None


def matching(documents: dict[str, DocumentInfo], filter: DocFilter | None) -> list[DocumentInfo]:
    """The documents the filter selects, in id order. Ids the corpus does not hold are an error
    naming them: a misspelt id would otherwise narrow the search without a word."""
    if filter is None:
        return list(documents.values())
    if filter.doc_ids is not None:
        unknown = [d for d in dict.fromkeys(filter.doc_ids) if d not in documents]
        if unknown:
            raise UnknownDocumentIds(unknown)
        # Looked up, not scanned for: a thousand ids against a large corpus stays a thousand lookups.
        candidates = [documents[d] for d in sorted(set(filter.doc_ids))]
        return [d for d in candidates if filter.matches(d)]
    return [d for d in documents.values() if filter.matches(d)]


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


# Said with the empty result of a search whose filter selects no document. An empty result, not an
# error: the listing of the same filter answers "0 documents", and a filter that matches nothing
# (a tag no document has yet) is an answer to the question asked, not a call to be repaired.
NO_MATCH = (
    "no document of this corpus matches the filter, so nothing was searched: list the corpus's documents "
    "to see their ids, paths and tags"
)


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
