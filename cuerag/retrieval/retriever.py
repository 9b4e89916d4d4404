"""Retrieval over one corpus: the stepwise primitives an agent can walk the graph with
(`link_entities`, `search_units`, `expand_entity`, nodes by id), the dense baseline, and Q-Iter
(`cuerag.retrieval.qiter`) built from them.

The result models live in `cuerag.retrieval.results`; they are re-exported here for code that imports them
from this module.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from cuerag.errors import ParameterError
from cuerag.graph.citations import citation_of
from cuerag.graph.ids import entity_point_id
from cuerag.graph.schema import CHUNKS, ENTITIES, UNITS, collection_name
from cuerag.graph.snapshot import Graph
from cuerag.models.base import Embedder
from cuerag.models.loading import Models
from cuerag.retrieval.filters import NO_MATCH
from cuerag.retrieval.lexical import LexicalScores, corpus_homogeneity
from cuerag.retrieval.results import (
    METHODS,
    Anchor,
    ChunkHit,
    ChunkNode,
    DepthTrace,
    EntityExpansion,
    EntityRef,
    HitSource,
    Method,
    PathTrace,
    QIterTrace,
    RetrievalResult,
    UnitHit,
    UnitNode,
    chunk_hit,
)
from cuerag.retrieval.scoring import Scorer
from cuerag.retrieval.snapshot_indexes import SnapshotIndexes
from cuerag.retrieval.subset import Subset
from cuerag.store.base import VectorStore

__all__ = [
    "METHODS",
    "Anchor",
    "ChunkHit",
    "ChunkNode",
    "DepthTrace",
    "EntityExpansion",
    "EntityRef",
    "HitSource",
    "Method",
    "PathTrace",
    "QIterTrace",
    "RetrievalResult",
    "Retriever",
    "UnitHit",
    "UnitNode",
    "chunk_hit",
]


class Retriever:
    """Retrieval over one graph snapshot. Cheap to build; one per query is fine."""

    def __init__(
        self,
        *,
        corpus: str,
        graph: Graph,
        store: VectorStore,
        models: Models,
        scorer: Scorer,
        derived: SnapshotIndexes | None = None,
        subset: Subset | None = None,
    ) -> None:
        self.corpus = corpus
        self.subset = subset  # None: the whole corpus
        self.graph = graph
        self.scorer = scorer
        self._store = store
        self._models = models
        self.derived = derived or SnapshotIndexes(graph)  # the engine keeps one per snapshot

    def lexical_scores(self, query: str) -> LexicalScores:
        """The query's BM25 evidence for every unit and chunk (zero outside the subset)."""
        scores = self.derived.lexical().scores(query)
        if self.subset is None:
            return scores
        return LexicalScores(units=scores.units * self.subset.units, chunks=scores.chunks * self.subset.chunks)

    def searched_chunk_vectors(self) -> np.ndarray:
        """The vectors of the chunks a search may return: the snapshot's, or the filter's subset's."""
        vectors = self.graph.chunk_vectors
        return vectors if self.subset is None else vectors[self.subset.chunks]

    def homogeneity(self) -> float:
        """How alike the searched chunks are (`corpus_homogeneity`): kept with the snapshot for the
        whole corpus; a filter's documents are measured on their own, since a manual's pages
        filtered out of a mixed folder are as alike as the manual alone."""
        if self.subset is None:
            return self.derived.homogeneity()
        return corpus_homogeneity(self.searched_chunk_vectors())

    @property
    def note(self) -> str | None:
        """Why every search comes back empty: the filter selects no document (None otherwise)."""
        return NO_MATCH if self.subset is not None and self.subset.empty else None

    def chunk_allowed(self, c: int) -> bool:
        return self.subset is None or self.subset.has_chunk(c)

    def unit_allowed(self, u: int) -> bool:
        return self.subset is None or self.subset.has_unit(u)

    def _allowed(self, kind: str, pos: int) -> bool:
        if self.subset is None:
            return True
        mask = {CHUNKS: self.subset.chunks, UNITS: self.subset.units, ENTITIES: self.subset.entities}[kind]
        return bool(mask[pos])

    # -- vectors --

    @property
    def embedder(self) -> Embedder:
        return self._models.embedder

    def embed_query(self, query: str) -> np.ndarray:
        return self._models.embedder.encode([query])[0]

    def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Several queries' vectors in one call to the embedder (one row each)."""
        return self._models.embedder.encode(list(queries))

    def query_vector(self, query: str, subtract_unit_ids: Sequence[str] = ()) -> np.ndarray:
        """The query's vector minus the vectors of the given units (Q-Iter's update φ − φ(k))."""
        vector = self.embed_query(query)
        for uid in subtract_unit_ids:
            vector = vector - self.graph.unit_vectors[self.graph.unit_pos[uid]]
        return vector

    def entity_vectors(self, entities: Sequence[int]) -> np.ndarray:
        """The stored vectors of entity nodes (their names as the embedder read them at indexing),
        one row per position given; zeros for one the store no longer holds. Read from the store:
        the graph keeps no entity vectors in memory, and a query needs only a few."""
        out = np.zeros((len(entities), self.graph.unit_vectors.shape[1]), dtype=np.float32)
        if not entities:
            return out
        ids = [self.graph.entity_ids[e] for e in entities]
        points = self._store.retrieve(collection_name(self.corpus, ENTITIES), ids, with_vectors=True)
        stored = {p.id: p.vector for p in points}
        for row, id_ in enumerate(ids):
            vector = stored.get(id_)
            if vector is not None:
                out[row] = vector
        return out

    # -- entities --

    def query_mentions(self, query: str) -> list[str]:
        """The named entities NER finds in the query, each once, in order. NER reads the query
        written as the corpus writes it, so the query's own letter case does not change them."""
        written = self.derived.casing().restore(query)
        return list(dict.fromkeys(s for s, _ in self._models.ner.extract([written])[0]))

    def link_entities(
        self, query: str, k: int, mentions: Sequence[str] | None = None
    ) -> tuple[list[str], list[Anchor]]:
        """Spreading activation's entry: the query's entities (NER, unless given, e.g. by an LLM),
        each linked to its top-k entity nodes by embedding similarity (an exact normalised-name
        match ranks first)."""
        found = self.query_mentions(query) if mentions is None else list(dict.fromkeys(mentions))
        return found, self.link_mentions(found, k)

    def link_mentions(self, mentions: Sequence[str], k: int) -> list[Anchor]:
        """Each mention's top-k entity nodes (one embedding call for all of them)."""
        if not mentions:
            return []
        anchors: list[Anchor] = []
        vectors = self._models.embedder.encode(list(mentions))
        for mention, vector in zip(mentions, vectors, strict=True):
            anchors.extend(self.link_mention(mention, k, vector=vector))
        return anchors

    def link_mention(self, mention: str, k: int, *, vector: np.ndarray | None = None) -> list[Anchor]:
        """The top-k entity nodes for one name."""
        if vector is None:
            vector = self._models.embedder.encode([mention])[0]
        graph = self.graph
        found: dict[int, float] = {}
        exact = graph.entity_pos.get(entity_point_id(mention))
        if exact is not None and self._allowed(ENTITIES, exact):
            found[exact] = 1.0
        wanted = k - len(found)
        for pos, score in self._live_hits(ENTITIES, vector, wanted, graph.entity_pos, skip=set(found)):
            found[pos] = score
        return [
            Anchor(
                entity_id=graph.entity_ids[e],
                name=graph.entity_names[e],
                source="query_entity",
                mention=mention,
                score=round(s, 6),
            )
            for e, s in list(found.items())[:k]
        ]

    def resolve_entity(self, entity: str) -> tuple[int, float]:
        """An entity node from its id or its name (linked by similarity), with the link score."""
        g = self.graph
        if self.note is not None:
            raise ParameterError(self.note)
        if entity in g.entity_pos:
            if not self._allowed(ENTITIES, g.entity_pos[entity]):
                raise ParameterError(
                    f"entity {g.entity_names[g.entity_pos[entity]]!r} is not mentioned in the documents the "
                    "filter selects; widen the filter or expand an entity from this filtered search"
                )
            return g.entity_pos[entity], 1.0
        if not entity.strip():
            raise ParameterError("entity is empty; pass an entity id or a name")
        linked = self.link_mention(entity, 1)
        if not linked:
            raise ParameterError(f"no entity node in corpus {self.corpus!r} matches {entity!r}")
        return g.entity_pos[linked[0].entity_id], linked[0].score

    # -- units --

    def nearest_units(self, vector: np.ndarray, k: int, exclude: set[int] | None = None) -> list[tuple[int, float]]:
        """Top-k live units by cosine with `vector` (Qdrant search, orphans skipped)."""
        return self._live_hits(UNITS, vector, k, self.graph.unit_pos, skip=exclude or set())

    def _live_hits(
        self, kind: str, vector: np.ndarray, k: int, live: dict[str, int], *, skip: set[int]
    ) -> list[tuple[int, float]]:
        """The k nearest points of a collection that this snapshot holds (their positions in it),
        leaving out `skip`. The store may hold points the snapshot does not: orphans of a killed
        run, or the points an index run is writing right now. However many there are, the search
        asks again for twice as many until it has k live hits or the collection is exhausted, so
        orphans can never push live points out of the answer."""
        if k <= 0 or self.note is not None:
            return []
        limit = max(2 * k, k + len(skip))
        where = self.subset.where[kind] if self.subset is not None else None
        while True:
            hits = self._store.search(collection_name(self.corpus, kind), vector, limit=limit, where=where)
            out: list[tuple[int, float]] = []
            for hit in hits:
                pos = live.get(hit.id)
                # The store's filter already keeps to the subset; the mask is the snapshot's word.
                if pos is not None and pos not in skip and self._allowed(kind, pos):
                    out.append((pos, hit.score))
                    if len(out) == k:
                        return out
            if len(hits) < limit:
                return out
            limit *= 2

    def adjacent_units(
        self,
        entity: int,
        vector: np.ndarray,
        k: int,
        exclude: set[int] | frozenset[int] = frozenset(),
        *,
        lexical: np.ndarray | None = None,
        lexical_weight: float = 0.0,
    ) -> list[tuple[int, float]]:
        """An entity's top-k adjacent units not in `exclude`, by cosine with `vector`, fused with
        the units' `lexical` scores when a weight is given."""
        units = self.graph.entity_units[entity]
        return self.top_units(units, vector, k, exclude, lexical=lexical, lexical_weight=lexical_weight)

    def top_units(
        self,
        units: Sequence[int],
        vector: np.ndarray,
        k: int,
        exclude: set[int] | frozenset[int] = frozenset(),
        *,
        lexical: np.ndarray | None = None,
        lexical_weight: float = 0.0,
        weights: Sequence[float] | None = None,
    ) -> list[tuple[int, float]]:
        """The top-k of `units` not in `exclude`, by cosine with `vector` fused with their `lexical`
        scores when a weight is given, each multiplied by its weight in `weights` if given."""
        kept = [i for i, u in enumerate(units) if u not in exclude and self.unit_allowed(u)]
        if not kept:
            return []
        adjacent = [units[i] for i in kept]
        norm = float(np.linalg.norm(vector)) or 1.0
        sims = self.graph.unit_vectors[adjacent] @ vector / norm
        if lexical is not None and lexical_weight > 0:
            sims = (1 - lexical_weight) * sims + lexical_weight * lexical[adjacent]
        if weights is not None:
            # A weight in (0, 1] lowers a score whatever its sign: a negative similarity (the
            # path's vector has lost the units already chosen) is pushed further down, not up to 0.
            w = np.asarray([weights[i] for i in kept], dtype=np.float32)
            sims = np.where(sims >= 0, sims * w, sims * (2 - w))
        top = np.argsort(-sims, kind="stable")[:k]
        return [(adjacent[i], float(sims[i])) for i in top]

    def unit_positions(self, unit_ids: Sequence[str]) -> set[int]:
        """Positions of unit ids; unknown ids are an error naming them."""
        unknown = [u for u in unit_ids if u not in self.graph.unit_pos]
        if unknown:
            raise ParameterError(f"unknown unit id(s) in corpus {self.corpus!r}: {', '.join(unknown[:5])}")
        return {self.graph.unit_pos[u] for u in unit_ids}

    def search_units(
        self, query: str, k: int, *, exclude: Sequence[str] = (), subtract: Sequence[str] = ()
    ) -> list[UnitHit]:
        """Units nearest the query vector (minus the `subtract` units' vectors), skipping `exclude`."""
        excluded = self.unit_positions(exclude)
        self.unit_positions(subtract)
        vector = self.query_vector(query, subtract)
        return [self.unit_hit(u, s) for u, s in self.nearest_units(vector, k, excluded)]

    def expand_entity(
        self, entity: str, query: str, k: int, *, exclude: Sequence[str] = (), subtract: Sequence[str] = ()
    ) -> EntityExpansion:
        """One hop from an entity: its units ranked against the query (minus `subtract`), skipping
        `exclude`, and the other entities those units mention (the next anchors)."""
        g = self.graph
        e, link_score = self.resolve_entity(entity)
        excluded = self.unit_positions(exclude)
        self.unit_positions(subtract)
        vector = self.query_vector(query, subtract)
        ranked = self.adjacent_units(e, vector, k, excluded)
        nexts = dict.fromkeys(n for u, _ in ranked for n in g.unit_entities[u] if n != e)
        return EntityExpansion(
            entity=self.entity_ref(e),
            link_score=round(link_score, 6),
            units=[self.unit_hit(u, s) for u, s in ranked],
            next_anchors=[self.entity_ref(n) for n in nexts],
            degree=len(g.entity_units[e]),
        )

    # -- nodes --

    def unit_hit(self, unit: int, score: float) -> UnitHit:
        g = self.graph
        return UnitHit(
            unit_id=g.unit_ids[unit],
            text=g.unit_texts[unit],
            score=round(score, 6),
            entity_ids=[g.entity_ids[e] for e in g.unit_entities[unit]],
            entity_names=[g.entity_names[e] for e in g.unit_entities[unit]],
            chunk_ids=[g.chunk_ids[c] for c in g.unit_chunks[unit] if self.chunk_allowed(c)],
        )

    def unit_node(self, unit: int) -> UnitNode:
        return UnitNode(**self.unit_hit(unit, 0.0).model_dump(exclude={"score"}))

    def chunk_node(self, chunk: int) -> ChunkNode:
        g = self.graph
        return ChunkNode(
            chunk_id=g.chunk_ids[chunk],
            doc_id=g.chunk_docs[chunk],
            title=g.chunk_titles[chunk],
            text=g.chunk_texts[chunk],
            unit_ids=[g.unit_ids[u] for u in g.chunk_units[chunk]],
            citation=citation_of(g, chunk),
        )

    def entity_ref(self, entity: int) -> EntityRef:
        g = self.graph
        return EntityRef(entity_id=g.entity_ids[entity], name=g.entity_names[entity], label=g.entity_labels[entity])

    def chunks_by_id(self, ids: Sequence[str]) -> list[ChunkNode]:
        """Chunks by id, in the order given; unknown ids are an error naming them."""
        return [self.chunk_node(c) for c in _positions(self.graph.chunk_pos, ids, "chunk")]

    def units_by_id(self, ids: Sequence[str]) -> list[UnitNode]:
        """Units by id, in the order given; unknown ids are an error naming them."""
        return [self.unit_node(u) for u in _positions(self.graph.unit_pos, ids, "unit")]

    # -- whole retrievals --

    def dense_ranking(self, query: str, n: int, *, vector: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Top-n chunk positions by cosine with the query, with their scores."""
        if vector is None:
            vector = self.embed_query(query)
        return self._live_hits(CHUNKS, vector, n, self.graph.chunk_pos, skip=set())

    def dense(self, query: str, top_n: int, *, vector: np.ndarray | None = None) -> RetrievalResult:
        """Top-N chunks by cosine with the query: the baseline Q-Iter is measured against."""
        started = time.perf_counter()
        hits = [chunk_hit(self.graph, c, s, "dense") for c, s in self.dense_ranking(query, top_n, vector=vector)]
        elapsed = (time.perf_counter() - started) * 1000
        return RetrievalResult(
            corpus=self.corpus, query=query, method="dense", chunks=hits, elapsed_ms=round(elapsed, 2)
        )


def _positions(index: dict[str, int], ids: Sequence[str], kind: str) -> list[int]:
    """Graph positions of the ids, in the order given; unknown ids are an error naming them."""
    missing = [i for i in ids if i not in index]
    if missing:
        raise ParameterError(f"unknown {kind} id(s): {', '.join(missing[:5])}; use ids returned by this corpus's tools")
    return [index[i] for i in ids]
