"""The multi-partite graph in memory: chunks, knowledge units and entities with their edges,
plus the unit and chunk vectors that Q-Iter scores against.

A `Graph` is an immutable snapshot built from the store alone (`load_graph`): the edges live in
the points' payloads (a chunk lists its units in order, a unit lists the entities it mentions),
so there is no side file to drift from the store. Points that no live chunk reaches (left by a
run that was killed half-way) are not part of the graph.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from cuerag.graph.chrome import chrome_units
from cuerag.graph.hyperlinks import resolve_links
from cuerag.graph.schema import (
    CHUNKS,
    ENTITIES,
    KINDS,
    UNITS,
    ChunkPayload,
    chunk_payload,
    collection_name,
    entity_payload,
    unit_payload,
)
from cuerag.graph.serving import current_versions
from cuerag.graph.title_mentions import TitleIndex
from cuerag.store.base import StoredPoint, VectorStore
from cuerag.text.chunk import SECTION_SEP, titled


def _index(ids: list[str]) -> dict[str, int]:
    return {id_: i for i, id_ in enumerate(ids)}


@dataclass(frozen=True)
class GraphPoints:
    chunks: dict[str, StoredPoint]
    units: dict[str, StoredPoint]
    entities: dict[str, StoredPoint]  # payloads only: entity vectors stay in the store


@dataclass(frozen=True)
class Graph:
    """Nodes are addressed by dense integer positions; the `*_ids` lists map them to point ids."""

    chunk_ids: list[str]
    chunk_docs: list[str]
    chunk_titles: list[str]
    chunk_texts: list[str]
    chunk_vectors: np.ndarray
    chunk_units: list[list[int]]
    unit_ids: list[str]
    unit_texts: list[str]
    unit_vectors: np.ndarray
    unit_entities: list[list[int]]
    unit_chunks: list[list[int]]
    entity_ids: list[str]
    entity_names: list[str]
    entity_labels: list[str]
    entity_units: list[list[int]]
    # Stored points no live chunk reaches (left by a killed run or a replaced document).
    orphan_unit_ids: list[str] = field(default_factory=list)
    orphan_entity_ids: list[str] = field(default_factory=list)
    # Stored chunks that are not served (cuerag.graph.serving): a version that lost to a newer one, or
    # one a killed run left incomplete. Deleted when found.
    orphan_chunk_ids: list[str] = field(default_factory=list)
    # Per chunk: its hyperlinks that lead to a corpus document (link position -> document id).
    chunk_links: list[dict[int, str]] = field(default_factory=list)
    chunk_sections: list[str] = field(default_factory=list)  # per chunk: its heading path, joined
    # Stored units that are site chrome (cuerag.graph.chrome), and the entities only they mention:
    # live, kept in the store, but no nodes of the graph. `chrome_edges`: the chunk-unit edges
    # they would have had.
    chrome_unit_ids: frozenset[str] = frozenset()
    chrome_entity_ids: frozenset[str] = frozenset()
    chrome_edges: int = 0
    # The live points the snapshot was built from, so the next one can be built from them plus
    # a run's changes instead of from a scroll of the whole store.
    points: GraphPoints | None = field(default=None, compare=False, repr=False)
    chunk_pos: dict[str, int] = field(init=False)
    unit_pos: dict[str, int] = field(init=False)
    entity_pos: dict[str, int] = field(init=False)
    title_index: TitleIndex = field(init=False, compare=False, repr=False)  # for following title links

    def __post_init__(self) -> None:
        object.__setattr__(self, "chunk_pos", _index(self.chunk_ids))
        object.__setattr__(self, "unit_pos", _index(self.unit_ids))
        object.__setattr__(self, "entity_pos", _index(self.entity_ids))
        object.__setattr__(self, "title_index", TitleIndex(self.chunk_titles))

    @property
    def sizes(self) -> dict[str, int]:
        edges_cu = sum(len(u) for u in self.chunk_units)
        edges_ue = sum(len(e) for e in self.unit_entities)
        return {
            "documents": len(set(self.chunk_docs)),
            "chunks": len(self.chunk_ids),
            "units": len(self.unit_ids),
            "entities": len(self.entity_ids),
            "chunk_unit_edges": edges_cu,
            "unit_entity_edges": edges_ue,
            "link_edges": sum(len(set(links.values())) for links in self.chunk_links),
            "chrome_units": len(self.chrome_unit_ids),
            "chrome_unit_edges": self.chrome_edges,
        }

    def holds_unit(self, unit_id: str) -> bool:
        """Whether the unit is stored and live: a node of the graph, or chrome."""
        return unit_id in self.unit_pos or unit_id in self.chrome_unit_ids

    def holds_entity(self, entity_id: str) -> bool:
        """Whether the entity is stored and live: a node of the graph, or mentioned only in chrome."""
        return entity_id in self.entity_pos or entity_id in self.chrome_entity_ids

    def chunk_full_text(self, c: int) -> str:
        section = self.chunk_sections[c] if c < len(self.chunk_sections) else ""
        return titled(self.chunk_titles[c], self.chunk_texts[c], section)

    def chunk_payload(self, c: int) -> ChunkPayload:
        """The stored payload of the chunk at position `c` (citation fields, links); empty for a
        graph built without its points."""
        if self.points is None:
            return cast(ChunkPayload, {})
        return chunk_payload(self.points.chunks[self.chunk_ids[c]])

    def doc_chunks(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for c, doc in enumerate(self.chunk_docs):
            out.setdefault(doc, []).append(c)
        return out


def build_graph(
    chunks: Iterable[StoredPoint], units: Iterable[StoredPoint], entities: Iterable[StoredPoint], *, dim: int
) -> Graph:
    """Assemble a snapshot from stored points, keeping only what live chunks reach, and of each
    document only one version."""
    chunk_list, stale_chunks = current_versions(chunks)
    chunk_list.sort(key=lambda p: (chunk_payload(p)["doc_id"], chunk_payload(p)["index"], p.id))
    unit_by_id = {p.id: p for p in units}
    entity_by_id = {p.id: p for p in entities}

    unit_ids: list[str] = []
    unit_pos: dict[str, int] = {}
    chunk_units: list[list[int]] = []
    for chunk in chunk_list:
        members = []
        for uid in chunk_payload(chunk)["unit_ids"]:
            if uid not in unit_by_id:
                continue  # the unit write never happened; the chunk keeps its other units
            if uid not in unit_pos:
                unit_pos[uid] = len(unit_ids)
                unit_ids.append(uid)
            if unit_pos[uid] not in members:
                members.append(unit_pos[uid])
        chunk_units.append(members)

    unit_chunks: list[list[int]] = [[] for _ in unit_ids]
    for c, members in enumerate(chunk_units):
        for u in members:
            unit_chunks[u].append(c)
    chrome = chrome_units(unit_chunks, [chunk_payload(p)["doc_id"] for p in chunk_list])
    chrome_ids = frozenset(unit_ids[u] for u in chrome)
    chrome_edges = sum(len(unit_chunks[u]) for u in chrome)
    if chrome:
        kept = [u for u in range(len(unit_ids)) if u not in chrome]
        renumbered = {old: new for new, old in enumerate(kept)}
        chunk_units = [[renumbered[u] for u in members if u in renumbered] for members in chunk_units]
        unit_chunks = [unit_chunks[u] for u in kept]
        unit_ids = [unit_ids[u] for u in kept]
        unit_pos = _index(unit_ids)

    entity_ids: list[str] = []
    entity_pos: dict[str, int] = {}
    unit_entities: list[list[int]] = []
    for uid in unit_ids:
        linked = []
        for eid in unit_payload(unit_by_id[uid]).get("entity_ids", []):
            if eid not in entity_by_id:
                continue
            if eid not in entity_pos:
                entity_pos[eid] = len(entity_ids)
                entity_ids.append(eid)
            linked.append(entity_pos[eid])
        unit_entities.append(linked)

    # A chunk's title names what its sentences are about: every unit of the chunk mentions it,
    # even "He was born in London" (a cheap stand-in for the pronoun resolution an LLM would do).
    for chunk, members in zip(chunk_list, chunk_units, strict=True):
        title_eid = chunk_payload(chunk).get("title_entity_id")
        if title_eid is None or title_eid not in entity_by_id:
            continue
        eid = title_eid
        if eid not in entity_pos:
            entity_pos[eid] = len(entity_ids)
            entity_ids.append(eid)
        for u in members:
            if entity_pos[eid] not in unit_entities[u]:
                unit_entities[u].append(entity_pos[eid])

    chrome_entities = frozenset(
        eid
        for uid in chrome_ids
        for eid in unit_payload(unit_by_id[uid]).get("entity_ids", [])
        if eid in entity_by_id and eid not in entity_pos
    )

    entity_units: list[list[int]] = [[] for _ in entity_ids]
    for u, linked in enumerate(unit_entities):
        for e in linked:
            entity_units[e].append(u)

    def stack(points: list[StoredPoint]) -> np.ndarray:
        if not points or dim == 0:  # dim 0: points read without vectors (see `stored_sizes`)
            return np.zeros((len(points), dim), dtype=np.float32)
        return np.stack([np.asarray(p.vector, dtype=np.float32) for p in points])

    return Graph(
        chunk_ids=[p.id for p in chunk_list],
        chunk_docs=[chunk_payload(p)["doc_id"] for p in chunk_list],
        chunk_titles=[chunk_payload(p).get("title", "") for p in chunk_list],
        chunk_texts=[chunk_payload(p)["text"] for p in chunk_list],
        chunk_vectors=stack(chunk_list),
        chunk_units=chunk_units,
        unit_ids=unit_ids,
        unit_texts=[unit_payload(unit_by_id[u])["text"] for u in unit_ids],
        unit_vectors=stack([unit_by_id[u] for u in unit_ids]),
        unit_entities=unit_entities,
        unit_chunks=unit_chunks,
        entity_ids=entity_ids,
        entity_names=[entity_payload(entity_by_id[e]).get("name", "") for e in entity_ids],
        entity_labels=[entity_payload(entity_by_id[e]).get("label", "") for e in entity_ids],
        entity_units=entity_units,
        orphan_unit_ids=sorted(unit_by_id.keys() - unit_pos.keys() - chrome_ids),
        orphan_entity_ids=sorted(entity_by_id.keys() - entity_pos.keys() - chrome_entities),
        orphan_chunk_ids=sorted(stale_chunks),
        chunk_links=resolve_links(
            [chunk_payload(p) for p in chunk_list],
            [chunk_payload(p)["doc_id"] for p in chunk_list],
            [chunk_payload(p).get("title", "") for p in chunk_list],
        ),
        chunk_sections=[SECTION_SEP.join(chunk_payload(p).get("section", [])) for p in chunk_list],
        chrome_unit_ids=chrome_ids,
        chrome_entity_ids=chrome_entities,
        chrome_edges=chrome_edges,
        points=GraphPoints(
            chunks={p.id: p for p in chunk_list},
            # Chrome too: the next snapshot, built from these points, may find it knowledge again.
            units={u: unit_by_id[u] for u in [*unit_ids, *sorted(chrome_ids)]},
            entities={e: StoredPoint(id=e, payload=entity_by_id[e].payload) for e in [*entity_ids, *chrome_entities]},
        ),
    )


def updated_graph(
    graph: Graph,
    *,
    chunks: Iterable[StoredPoint] = (),
    units: Iterable[StoredPoint] = (),
    entities: Iterable[StoredPoint] = (),
    removed_chunks: Iterable[str] = (),
) -> Graph:
    """The next snapshot: this one's live points plus what a run wrote, minus removed chunks.
    Equal to `load_graph` on the store after the same writes (the tests hold it to that); its
    orphans are the units and entities the removals left unreachable."""
    if graph.points is None:
        raise ValueError("this graph was not built from points; rebuild it with load_graph")
    merged_chunks = {**graph.points.chunks, **{p.id: p for p in chunks}}
    for chunk_id in removed_chunks:
        merged_chunks.pop(chunk_id, None)
    merged_units = {**graph.points.units, **{p.id: p for p in units}}
    merged_entities = {**graph.points.entities, **{p.id: p for p in entities}}
    return build_graph(
        merged_chunks.values(), merged_units.values(), merged_entities.values(), dim=graph.unit_vectors.shape[1]
    )


def load_graph(store: VectorStore, corpus: str, *, dim: int) -> Graph:
    """Rebuild a corpus's graph from its three collections."""
    chunks = list(store.scroll(collection_name(corpus, CHUNKS), with_vectors=True))
    units = list(store.scroll(collection_name(corpus, UNITS), with_vectors=True))
    entities = list(store.scroll(collection_name(corpus, ENTITIES), with_vectors=False))
    return build_graph(chunks, units, entities, dim=dim)


def stored_sizes(store: VectorStore, corpus: str) -> dict[str, int]:
    """A corpus's `Graph.sizes` read from payloads alone: no vectors are read and no model is
    needed, so listing corpora stays fast. The same counting rules as the snapshot (only what
    live chunks reach counts), since the graph is built the same way, without its vectors."""
    chunks = store.scroll(collection_name(corpus, CHUNKS), with_vectors=False)
    units = store.scroll(collection_name(corpus, UNITS), with_vectors=False)
    entities = store.scroll(collection_name(corpus, ENTITIES), with_vectors=False)
    return build_graph(chunks, units, entities, dim=0).sizes


def stored_counts(store: VectorStore, corpus: str) -> dict[str, int]:
    """Documents, chunks, units and entities as stored: the chunks' payloads and the collections'
    point counts, which is all a corpus listing needs. Units and entities that a killed run left
    unreachable count here until the next write collects them; `stored_sizes` leaves them out."""
    docs = {chunk_payload(p)["doc_id"] for p in store.scroll(collection_name(corpus, CHUNKS), with_vectors=False)}
    counts = {kind: store.count(collection_name(corpus, kind)) for kind in KINDS}
    return {"documents": len(docs), **counts}
