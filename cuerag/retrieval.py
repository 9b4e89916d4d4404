"""Retrieval over one corpus: the traversal primitives, Q-Iter (the paper's Algorithms 3 and 4)
built from them, and the dense baseline.

The primitives (`link_entities`, `search_units`, `expand_entity`) are public so that an agent can
step through the graph itself and reproduce what Q-Iter does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel

from cuerag.citations import Citation, citation_of
from cuerag.config import QIterParams
from cuerag.errors import ParameterError
from cuerag.graph import CHUNKS, ENTITIES, UNITS, Graph, collection_name
from cuerag.ids import entity_point_id
from cuerag.models import Models
from cuerag.scoring import Scorer
from cuerag.store.base import VectorStore

# ---- results -------------------------------------------------------------------------------------


class Anchor(BaseModel):
    """An entity node Q-Iter starts from, and why."""

    entity_id: str
    name: str
    source: Literal["query_entity", "unit"]
    mention: str  # the query's mention, or the text of the unit that mentions the entity
    score: float


class UnitNode(BaseModel):
    """A knowledge unit with its edges."""

    unit_id: str
    text: str
    entity_ids: list[str]
    entity_names: list[str]
    chunk_ids: list[str]


class UnitHit(UnitNode):
    score: float


class ChunkNode(BaseModel):
    """A chunk with its units in reading order."""

    chunk_id: str
    doc_id: str
    title: str
    text: str
    unit_ids: list[str]


class EntityRef(BaseModel):
    entity_id: str
    name: str
    label: str


class EntityExpansion(BaseModel):
    """One traversal step from an entity: its units ranked against a query vector, and the other
    entities those units mention (the next anchors)."""

    entity: EntityRef
    link_score: float  # 1.0 for an id or exact name; the name's similarity otherwise
    units: list[UnitHit]
    next_anchors: list[EntityRef]
    degree: int  # how many units mention the entity in all


class PathTrace(BaseModel):
    """One kept path: its units in the order they were reached, the entity each step came
    through, the entities the last unit offers as next anchors, and the reranker's score."""

    unit_ids: list[str]
    unit_texts: list[str]
    via_entities: list[str]
    next_anchors: list[str]
    score: float


class DepthTrace(BaseModel):
    depth: int
    candidates: int
    paths: list[PathTrace]


class QIterTrace(BaseModel):
    query_entities: list[str]
    entity_source: Literal["ner", "llm"] = "ner"  # who read the entities in the query
    anchors: list[Anchor]
    depths: list[DepthTrace]
    collected_units: int
    candidate_chunks: int  # all the final rerank scored: reached by the walk, named, linked
    named_chunks: int = 0  # of the candidates, those the query names by title
    linked_chunks: int = 0  # of the candidates, those a title link brought in or raised


HitSource = Literal["graph", "dense", "bm25", "hybrid", "ketrag"]


class ChunkHit(BaseModel):
    chunk_id: str
    doc_id: str
    title: str
    text: str
    score: float
    source: HitSource  # what found it
    unit_ids: list[str] = []  # collected units this chunk holds (why it came back)
    linked_from: str | None = None  # the chunk whose text names this one's title, when that link set the score
    named_in_query: bool = False  # the query names this chunk's title
    citation: Citation | None = None  # source, pages, section, span and hyperlinks of the chunk


Method = Literal["qiter", "dense", "bm25", "hybrid", "ketrag"]
METHODS: tuple[str, ...] = ("qiter", "dense", "bm25", "hybrid", "ketrag")


class RetrievalResult(BaseModel):
    corpus: str
    query: str
    method: Method
    chunks: list[ChunkHit]
    trace: QIterTrace | None = None
    elapsed_ms: float


def chunk_hit(
    graph: Graph,
    c: int,
    score: float,
    source: HitSource,
    units: Sequence[int] = (),
    linked_from: int | None = None,
    named_in_query: bool = False,
) -> ChunkHit:
    """A retrieved chunk, with what brought it: collected units, a title link, the query's words."""
    return ChunkHit(
        chunk_id=graph.chunk_ids[c],
        doc_id=graph.chunk_docs[c],
        title=graph.chunk_titles[c],
        text=graph.chunk_texts[c],
        score=round(float(score), 6),
        source=source,
        unit_ids=[graph.unit_ids[u] for u in units],
        linked_from=None if linked_from is None else graph.chunk_ids[linked_from],
        named_in_query=named_in_query,
        citation=citation_of(graph, c),
    )


# The path evidence of a chunk the query names by its title: an exact link, the top of the scale of
# both scorers (cosine, and a cross-encoder's sigmoid; a reranker giving raw logits can score a
# path higher, which is why a named chunk keeps the better of the two scores).
_EXACT_LINK = 1.0
# Rounds of title links: a link that lifts a chunk into the top ones has that chunk's links followed
# in turn, so a chain of passages (question -> A -> B -> C) is walked. Chains on the shared samples
# need two rounds at most; the cap bounds the work on a corpus whose titles link densely.
_MAX_LINK_ROUNDS = 4


@dataclass(frozen=True)
class QIterCounts:
    candidates: int
    named: int
    linked: int


def _scored(
    score: Callable[[str, np.ndarray, Sequence[int]], np.ndarray],
    query: str,
    vector: np.ndarray,
    groups: Sequence[Sequence[int]],
) -> dict[int, float]:
    """Each chunk of the groups scored once."""
    chunks = list(dict.fromkeys(c for group in groups for c in group))
    return dict(zip(chunks, score(query, vector, chunks).tolist(), strict=True))


# ---- Q-Iter state --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Path:
    order: tuple[int, ...]  # units in the order reached
    via: tuple[int, ...]  # entity each step came through
    vector: np.ndarray  # the path's query vector, after the updates
    anchors: tuple[int, ...]  # entities to expand next

    @property
    def key(self) -> frozenset[int]:
        return frozenset(self.order)


def _sorted_unit_set(units: Sequence[int]) -> list[int]:
    # Graph positions follow chunk order then sentence order: sorting gives a reading order.
    return sorted(set(units))


class Retriever:
    """Retrieval over one graph snapshot. Cheap to build; one per query is fine."""

    def __init__(self, *, corpus: str, graph: Graph, store: VectorStore, models: Models, scorer: Scorer) -> None:
        self.corpus = corpus
        self.graph = graph
        self._store = store
        self._models = models
        self._scorer = scorer

    # -- primitives --

    def embed_query(self, query: str) -> np.ndarray:
        return self._models.embedder.encode([query])[0]

    def query_vector(self, query: str, subtract_unit_ids: Sequence[str] = ()) -> np.ndarray:
        """The query's vector minus the vectors of the given units (Q-Iter's update φ − φ(k))."""
        vector = self.embed_query(query)
        for uid in subtract_unit_ids:
            vector = vector - self.graph.unit_vectors[self.graph.unit_pos[uid]]
        return vector

    def link_entities(
        self, query: str, k: int, mentions: Sequence[str] | None = None
    ) -> tuple[list[str], list[Anchor]]:
        """Spreading activation's entry: the query's entities (NER, unless given, e.g. by an LLM),
        each linked to its top-k entity nodes by embedding similarity (an exact normalised-name
        match ranks first)."""
        if mentions is None:
            mentions = [s for s, _ in self._models.ner.extract([query])[0]]
        mentions = list(dict.fromkeys(mentions))
        anchors: list[Anchor] = []
        if not mentions:
            return mentions, anchors
        vectors = self._models.embedder.encode(mentions)
        for mention, vector in zip(mentions, vectors, strict=True):
            anchors.extend(self.link_mention(mention, k, vector=vector))
        return mentions, anchors

    def link_mention(self, mention: str, k: int, *, vector: np.ndarray | None = None) -> list[Anchor]:
        """The top-k entity nodes for one name."""
        if vector is None:
            vector = self._models.embedder.encode([mention])[0]
        graph = self.graph
        found: dict[int, float] = {}
        exact = graph.entity_pos.get(entity_point_id(mention))
        if exact is not None:
            found[exact] = 1.0
        for hit in self._store.search(collection_name(self.corpus, ENTITIES), vector, limit=k * 2 + 1):
            pos = graph.entity_pos.get(hit.id)
            if pos is not None and pos not in found:
                found[pos] = hit.score
            if len(found) >= k:
                break
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

    def nearest_units(self, vector: np.ndarray, k: int, exclude: set[int] | None = None) -> list[tuple[int, float]]:
        """Top-k live units by cosine with `vector` (Qdrant search, orphans skipped)."""
        exclude = exclude or set()
        out: list[tuple[int, float]] = []
        limit = k + len(exclude) + 8
        for hit in self._store.search(collection_name(self.corpus, UNITS), vector, limit=limit):
            pos = self.graph.unit_pos.get(hit.id)
            if pos is None or pos in exclude:
                continue
            out.append((pos, hit.score))
            if len(out) >= k:
                break
        return out

    def adjacent_units(
        self, entity: int, vector: np.ndarray, k: int, exclude: set[int] | frozenset[int] = frozenset()
    ) -> list[tuple[int, float]]:
        """An entity's top-k adjacent units not in `exclude`, by cosine with `vector`."""
        adjacent = [u for u in self.graph.entity_units[entity] if u not in exclude]
        if not adjacent:
            return []
        norm = float(np.linalg.norm(vector)) or 1.0
        sims = self.graph.unit_vectors[adjacent] @ vector / norm
        top = np.argsort(-sims, kind="stable")[:k]
        return [(adjacent[i], float(sims[i])) for i in top]

    def unit_hit(self, unit: int, score: float) -> UnitHit:
        g = self.graph
        return UnitHit(
            unit_id=g.unit_ids[unit],
            text=g.unit_texts[unit],
            score=round(score, 6),
            entity_ids=[g.entity_ids[e] for e in g.unit_entities[unit]],
            entity_names=[g.entity_names[e] for e in g.unit_entities[unit]],
            chunk_ids=[g.chunk_ids[c] for c in g.unit_chunks[unit]],
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
        )

    def entity_ref(self, entity: int) -> EntityRef:
        g = self.graph
        return EntityRef(entity_id=g.entity_ids[entity], name=g.entity_names[entity], label=g.entity_labels[entity])

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

    def resolve_entity(self, entity: str) -> tuple[int, float]:
        """An entity node from its id or its name (linked by similarity), with the link score."""
        g = self.graph
        if entity in g.entity_pos:
            return g.entity_pos[entity], 1.0
        if not entity.strip():
            raise ParameterError("entity is empty; pass an entity id or a name")
        linked = self.link_mention(entity, 1)
        if not linked:
            raise ParameterError(f"no entity node in corpus {self.corpus!r} matches {entity!r}")
        return g.entity_pos[linked[0].entity_id], linked[0].score

    def expand_entity(
        self, entity: str, query: str, k: int, *, exclude: Sequence[str] = (), subtract: Sequence[str] = ()
    ) -> EntityExpansion:
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

    # -- Q-Iter --

    def q_iter(self, query: str, params: QIterParams, *, entities: Sequence[str] | None = None) -> RetrievalResult:
        """Q-Iter: anchoring (Algorithm 3), beam search (Algorithm 4), final rerank of chunks.
        `entities` replaces NER on the query (the LLM's reading of its entities)."""
        started = time.perf_counter()
        qvec = self.embed_query(query)
        mentions, anchors = self._anchor(query, qvec, params, entities)
        start = tuple(dict.fromkeys(self.graph.entity_pos[a.entity_id] for a in anchors))
        depths, collected = self._beam_search(query, qvec, start, params)
        hits, counts = self._final_rerank(query, qvec, collected, params)
        trace = QIterTrace(
            query_entities=mentions,
            entity_source="ner" if entities is None else "llm",
            anchors=anchors,
            depths=depths,
            collected_units=len(collected),
            candidate_chunks=counts.candidates,
            named_chunks=counts.named,
            linked_chunks=counts.linked,
        )
        elapsed = (time.perf_counter() - started) * 1000
        return RetrievalResult(
            corpus=self.corpus, query=query, method="qiter", chunks=hits, trace=trace, elapsed_ms=round(elapsed, 2)
        )

    def _anchor(
        self, query: str, qvec: np.ndarray, params: QIterParams, given: Sequence[str] | None
    ) -> tuple[list[str], list[Anchor]]:
        """Entity anchoring: the query's entities linked to entity nodes (spreading activation),
        and the entities of the units nearest the query (knowledge anchoring)."""
        g = self.graph
        mentions: list[str] = []
        anchors: list[Anchor] = []
        if params.spreading_activation:
            mentions, anchors = self.link_entities(query, params.k, given)
        if params.knowledge_anchoring:
            for unit, score in self.nearest_units(qvec, params.k):
                anchors.extend(
                    Anchor(
                        entity_id=g.entity_ids[e],
                        name=g.entity_names[e],
                        source="unit",
                        mention=g.unit_texts[unit],
                        score=round(score, 6),
                    )
                    for e in g.unit_entities[unit]
                )
        return mentions, anchors

    def _beam_search(
        self, query: str, qvec: np.ndarray, start: tuple[int, ...], params: QIterParams
    ) -> tuple[list[DepthTrace], dict[int, float]]:
        """D hops: from each kept path's anchors, the top-K unused adjacent units by cosine with the
        path's vector; the path's vector loses each chosen unit's vector; the M best unit sets by
        reranker score are kept. Returns the trace and each collected unit's best path score."""
        g = self.graph
        beam = [_Path(order=(), via=(), vector=qvec, anchors=start)]
        depths: list[DepthTrace] = []
        collected: dict[int, float] = {}
        for depth in range(1, params.depth + 1):
            candidates: dict[frozenset[int], _Path] = {}
            for path in beam:
                for entity in path.anchors:
                    for unit, _sim in self.adjacent_units(entity, path.vector, params.k, path.key):
                        new = _Path(
                            order=(*path.order, unit),
                            via=(*path.via, entity),
                            vector=path.vector - g.unit_vectors[unit] if params.query_update else path.vector,
                            anchors=tuple(g.unit_entities[unit]),
                        )
                        candidates.setdefault(new.key, new)  # one path per unit set
            if not candidates:
                break
            paths = list(candidates.values())
            scores = self._scorer.score_paths(query, qvec, [_sorted_unit_set(p.order) for p in paths])
            ranked = sorted(zip(scores.tolist(), range(len(paths)), strict=True), key=lambda t: (-t[0], t[1]))
            kept = [(paths[i], score) for score, i in ranked[: params.beam]]
            beam = [path for path, _ in kept]
            for path, score in kept:
                for unit in path.order:
                    collected[unit] = max(score, collected.get(unit, float("-inf")))
            depths.append(
                DepthTrace(depth=depth, candidates=len(paths), paths=[self._path_trace(p, s) for p, s in kept])
            )
        return depths, collected

    def _final_rerank(
        self, query: str, qvec: np.ndarray, collected: dict[int, float], params: QIterParams
    ) -> tuple[list[ChunkHit], QIterCounts]:
        """The chunks holding the collected units and those the query names by title, reranked
        (with path evidence when path_weight > 0), then the chunks the best of them name by title;
        top N. Dense hits fill up when the graph reached fewer."""
        g = self.graph
        chunk_units: dict[int, list[int]] = {}
        for unit in collected:
            for c in g.unit_chunks[unit]:
                chunk_units.setdefault(c, []).append(unit)
        chunks = list(chunk_units)
        chunk_scores = self._scorer.score_chunks(query, qvec, chunks)
        if params.path_weight > 0 and chunks:
            evidence = np.asarray([max(collected[u] for u in chunk_units[c]) for c in chunks], dtype=np.float32)
            chunk_scores = (1 - params.path_weight) * chunk_scores + params.path_weight * evidence
        scores = dict(zip(chunks, chunk_scores.tolist(), strict=True))
        named = self._add_query_titles(query, qvec, scores, params) if params.query_titles else set()
        linked = self._follow_title_links(query, qvec, scores, params) if params.title_links else {}
        order = sorted(scores, key=lambda c: (-scores[c], c))[: params.top_n]
        hits = [
            self._chunk_hit(
                c, scores[c], "graph", chunk_units.get(c, []), linked[c][1] if c in linked else None, c in named
            )
            for c in order
        ]
        if params.fill_with_dense and len(hits) < params.top_n:
            taken = {h.chunk_id for h in hits}
            for hit in self.dense(query, params.top_n + len(taken), vector=qvec).chunks:
                if hit.chunk_id not in taken and len(hits) < params.top_n:
                    hits.append(hit)
        return hits, QIterCounts(candidates=len(scores), named=len(named), linked=len(linked))

    def _add_query_titles(
        self, query: str, qvec: np.ndarray, scores: dict[int, float], params: QIterParams
    ) -> set[int]:
        """For each title the query names, its chunk closest to the query joins the candidates with
        full path evidence (an exact link): the query itself points at that passage. Returns them."""
        named = self.graph.title_index.named_in(query, loose_case=True)
        if not named:
            return set()
        own = _scored(self._scorer.score_chunks, query, qvec, named)
        w = params.path_weight
        best: set[int] = set()
        for chunks in named:
            c = max(chunks, key=lambda c: (own[c], -c))
            scores[c] = max(scores.get(c, float("-inf")), (1 - w) * own[c] + w * _EXACT_LINK)
            best.add(c)
        return best

    def _follow_title_links(
        self, query: str, qvec: np.ndarray, scores: dict[int, float], params: QIterParams
    ) -> dict[int, tuple[float, int]]:
        """Title links from the top `title_links` candidates (see `_links_from`). When the links lift
        a chunk into the top ones, its links are followed in turn, until the top ones have all been
        followed (at most `_MAX_LINK_ROUNDS` rounds). Raises `scores` in place; returns each linked
        chunk's score and the chunk that named it."""
        linked: dict[int, tuple[float, int]] = {}
        followed: set[int] = set()
        for _ in range(_MAX_LINK_ROUNDS):
            top = sorted(scores, key=lambda c: (-scores[c], c))[: params.title_links]
            heads = [c for c in top if c not in followed]
            if not heads:
                break
            followed.update(heads)
            for c, (score, head) in self._links_from(heads, query, qvec, scores, params).items():
                linked[c] = (score, head)
                scores[c] = score
        return linked

    def _links_from(
        self, heads: Sequence[int], query: str, qvec: np.ndarray, scores: dict[int, float], params: QIterParams
    ) -> dict[int, tuple[float, int]]:
        """For each title the heads name, its chunk that best fits the next hop of a chain: scored
        against the query plus the naming chunk (as multi-hop dense retrieval reads a passage with
        the question; a text reranker reads the query followed by the naming chunk's title), mixed
        with the naming chunk's score raised by `link_boost`. A chunk that is a candidate already
        takes its link score only when that is higher: the beam may reach the next passage through
        a weak path. Returns each such chunk's best link score and the head that named it."""
        g = self.graph
        w = params.path_weight
        linked: dict[int, tuple[float, int]] = {}
        for head in heads:
            named = g.title_index.named_in(g.chunk_texts[head], exclude_titles_of=head)
            if not named:
                continue
            hop = qvec + g.chunk_vectors[head]
            hop = hop / max(float(np.linalg.norm(hop)), 1e-12)
            own = _scored(self._scorer.score_chunks, f"{query} {g.chunk_titles[head]}", hop, named)
            for chunks in named:
                # The title's chunk that fits the hop best, even when another chunk of it is a
                # candidate already: passages that share a title hold different facts (MuSiQue's
                # "Caribbean Community" has one on its history and one with the join dates).
                c = max(chunks, key=lambda c: (own[c], -c))
                total = (1 - w) * own[c] + w * (1 + params.link_boost) * scores[head]
                if total <= scores.get(c, float("-inf")):
                    continue  # the chunk scores better as it is
                if c not in linked or total > linked[c][0]:
                    linked[c] = (total, head)
        return linked

    def _path_trace(self, path: _Path, score: float) -> PathTrace:
        g = self.graph
        return PathTrace(
            unit_ids=[g.unit_ids[u] for u in path.order],
            unit_texts=[g.unit_texts[u] for u in path.order],
            via_entities=[g.entity_names[e] for e in path.via],
            next_anchors=[g.entity_names[e] for e in path.anchors],
            score=round(float(score), 6),
        )

    def _chunk_hit(
        self,
        c: int,
        score: float,
        source: HitSource,
        units: Sequence[int],
        linked_from: int | None = None,
        named_in_query: bool = False,
    ) -> ChunkHit:
        return chunk_hit(self.graph, c, score, source, units, linked_from, named_in_query)

    # -- dense baseline --

    def dense(self, query: str, top_n: int, *, vector: np.ndarray | None = None) -> RetrievalResult:
        """Top-N chunks by cosine with the query: the baseline Q-Iter is measured against."""
        started = time.perf_counter()
        if vector is None:
            vector = self.embed_query(query)
        hits: list[ChunkHit] = []
        for hit in self._store.search(collection_name(self.corpus, CHUNKS), vector, limit=top_n + 8):
            c = self.graph.chunk_pos.get(hit.id)
            if c is not None:
                hits.append(self._chunk_hit(c, hit.score, "dense", []))
            if len(hits) >= top_n:
                break
        elapsed = (time.perf_counter() - started) * 1000
        return RetrievalResult(
            corpus=self.corpus, query=query, method="dense", chunks=hits, elapsed_ms=round(elapsed, 2)
        )
