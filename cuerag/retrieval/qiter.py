"""Q-Iter (the paper's Algorithms 3 and 4) built on the retriever's primitives: anchoring, the beam
search over entity → unit → entity hops, and the final rerank of the chunks the walk reached.

Besides entities, the beam hops along link edges (`cuerag.retrieval.link_edges`, with `link_hops` on): from a
path's last unit to the units of a document its sentence hyperlinks or names by title, and at the
first hop from the question to the documents it names. Such a hop is chosen and scored as an
entity hop is, so title and link evidence competes inside the walk rather than after it.

Each stage's time is kept in the trace (`stage_ms`), so an evaluation can say where it goes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from cuerag.config import QIterParams
from cuerag.retrieval.entity_links import follow_entities
from cuerag.retrieval.lexical import LexicalFusion, LexicalScores, homogeneity_floor, lexical_share
from cuerag.retrieval.link_edges import LinkTarget
from cuerag.retrieval.results import (
    Anchor,
    ChunkHit,
    DepthTrace,
    LinkedKind,
    PathTrace,
    QIterTrace,
    RetrievalResult,
    TitleStep,
    chunk_hit,
)
from cuerag.retrieval.scoring import Scorer, best_chunks
from cuerag.retrieval.title_links import TitleEvidence

if TYPE_CHECKING:
    from cuerag.retrieval.retriever import Retriever
from cuerag.retrieval.stages import StageClock


@dataclass(frozen=True)
class _Path:
    order: tuple[int, ...]  # units in the order reached
    via: tuple[int | LinkTarget, ...]  # entity (its position) or link edge each step came through
    vector: np.ndarray  # the path's query vector, after the updates
    anchors: tuple[int, ...]  # entities to expand next

    @property
    def key(self) -> frozenset[int]:
        return frozenset(self.order)


def _sorted_unit_set(units: Sequence[int]) -> list[int]:
    # Graph positions follow chunk order then sentence order: sorting gives a reading order.
    return sorted(set(units))


def q_iter(
    retriever: Retriever, query: str, params: QIterParams, *, entities: Sequence[str] | None = None
) -> RetrievalResult:
    """Q-Iter: anchoring (Algorithm 3), beam search (Algorithm 4), final rerank of chunks.
    `entities` replaces NER on the query (the LLM's reading of its entities)."""
    return _QIterRun(retriever, query, params).run(entities)


class _QIterRun:
    """One query's Q-Iter over one retriever (one graph snapshot)."""

    def __init__(self, retriever: Retriever, query: str, params: QIterParams) -> None:
        self.r = retriever
        self.graph = retriever.graph
        self.scorer: Scorer = retriever.scorer
        self.query = query
        self.params = params
        self.clock = StageClock()
        self.lexical: LexicalScores | None = None
        self.lexical_weight = 0.0  # this query's, after `lexical_adaptive`
        self.bridge = 0.0  # this query's entity-link bridge weight, after its lexical share
        self.lexical_candidates = 0

    def run(self, given: Sequence[str] | None) -> RetrievalResult:
        started = time.perf_counter()
        qvec = self.r.embed_query(self.query)
        self.clock.lap("embed")
        params = self.params
        adaptive = params.lexical_weight > 0 and params.lexical_adaptive
        bridged = params.entity_links > 0 and params.link_bridge > 0
        share = self._lexical_share(qvec) if adaptive or bridged else 1.0
        self.bridge = params.link_bridge * (1 - share) if bridged else 0.0
        lexical_share_used = share if adaptive else 1.0  # without adapting, the whole weight
        self.lexical_weight = params.lexical_weight * lexical_share_used
        self.lexical_candidates = round(params.lexical_candidates * lexical_share_used)
        if self.lexical_weight > 0:
            self.lexical = self.r.lexical_scores(self.query)
            self.scorer = LexicalFusion(self.scorer, self.lexical, self.lexical_weight)
        # With the lexical channel off, the share measured for the bridge alone (a matrix-vector
        # product, ~0.03 ms on a small corpus) is charged to the next stage: "lexical" in a trace
        # means BM25 ran.
        if self.params.lexical_weight > 0:
            self.clock.lap("lexical")
        mentions, anchors = self._anchor(qvec, given)
        start = tuple(dict.fromkeys(self.graph.entity_pos[a.entity_id] for a in anchors))
        depths, collected = self._beam_search(qvec, start)
        self.clock.lap("beam")
        hits, counts, title_steps = self._final_rerank(qvec, collected)
        trace = QIterTrace(
            query_entities=mentions,
            entity_source="ner" if given is None else "llm",
            anchors=anchors,
            depths=depths,
            collected_units=len(collected),
            candidate_chunks=counts[0],
            named_chunks=counts[1],
            linked_chunks=counts[2],
            entity_linked_chunks=counts[3],
            lexical_weight=round(self.lexical_weight, 4),
            link_bridge=round(self.bridge, 4),
            title_steps=title_steps,
            stage_ms={s: round(ms, 3) for s, ms in self.clock.ms.items()},
        )
        elapsed = (time.perf_counter() - started) * 1000
        return RetrievalResult(
            corpus=self.r.corpus,
            query=self.query,
            method="qiter",
            chunks=hits,
            trace=trace,
            elapsed_ms=round(elapsed, 2),
        )

    def _lexical_share(self, qvec: np.ndarray) -> float:
        """How unsure the embedder is for this query, in [0, 1]: `lexical_share`, at least
        `lexical_floor`, raised to the whole in a corpus on one subject (`lexical_homogeneity`). It
        scales the lexical channel (with `lexical_adaptive`) and, whether that channel is on or
        not, the entity links' bridge, which is the embedder's reading of a name."""
        floor = self.params.lexical_floor
        if self.params.lexical_homogeneity:
            floor = max(floor, homogeneity_floor(self.r.homogeneity()))
        if floor >= 1.0:
            return 1.0
        return floor + (1 - floor) * lexical_share(self.r.searched_chunk_vectors() @ qvec)

    def _anchor(self, qvec: np.ndarray, given: Sequence[str] | None) -> tuple[list[str], list[Anchor]]:
        """Entity anchoring: the query's entities linked to entity nodes (spreading activation),
        and the entities of the units nearest the query (knowledge anchoring)."""
        g, params = self.graph, self.params
        mentions: list[str] = []
        anchors: list[Anchor] = []
        if params.spreading_activation:
            mentions = list(dict.fromkeys(self.r.query_mentions(self.query) if given is None else given))
            self.clock.lap("ner")
            anchors = self.r.link_mentions(mentions, params.k)
            self.clock.lap("entity_linking")
        if params.knowledge_anchoring:
            for unit, score in self._anchor_units(qvec):
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
            self.clock.lap("anchor_units")
        return mentions, anchors

    def _anchor_units(self, qvec: np.ndarray) -> list[tuple[int, float]]:
        """The K units nearest the query: by cosine, or with the lexical channel on, by the fused
        score over the K nearest by cosine and the K best by BM25 (so a unit that names the
        query's identifier can anchor the walk though the embedder ranks it low)."""
        k = self.params.k
        dense = self.r.nearest_units(qvec, k)
        if self.lexical is None:
            return dense
        w = self.lexical_weight
        cosine = dict(dense)
        lexical_top = [u for u, _ in self.lexical.top_units(k) if u not in cosine]
        if lexical_top:
            norm = float(np.linalg.norm(qvec)) or 1.0
            sims = self.graph.unit_vectors[lexical_top] @ qvec / norm
            cosine |= dict(zip(lexical_top, sims.tolist(), strict=True))
        fused = {u: (1 - w) * c + w * float(self.lexical.units[u]) for u, c in cosine.items()}
        return sorted(fused.items(), key=lambda t: (-t[1], t[0]))[:k]

    def _beam_search(self, qvec: np.ndarray, start: tuple[int, ...]) -> tuple[list[DepthTrace], dict[int, float]]:
        """D hops: from each kept path's anchors, the top-K unused adjacent units by cosine with the
        path's vector (and with `link_hops`, the top-K units its last unit's link edges lead to);
        the path's vector loses each chosen unit's vector; the M best unit sets by
        reranker score are kept. Returns the trace and each collected unit's best path score."""
        g, params = self.graph, self.params
        beam = [_Path(order=(), via=(), vector=qvec, anchors=start)]
        depths: list[DepthTrace] = []
        collected: dict[int, float] = {}
        for depth in range(1, params.depth + 1):
            candidates: dict[frozenset[int], _Path] = {}
            for path in beam:
                for entity in path.anchors:
                    for unit, _sim in self.r.adjacent_units(
                        entity,
                        path.vector,
                        params.k,
                        path.key,
                        lexical=None if self.lexical is None else self.lexical.units,
                        lexical_weight=self.lexical_weight,
                    ):
                        new = _Path(
                            order=(*path.order, unit),
                            via=(*path.via, entity),
                            vector=path.vector - g.unit_vectors[unit] if params.query_update else path.vector,
                            anchors=tuple(g.unit_entities[unit]),
                        )
                        candidates.setdefault(new.key, new)  # one path per unit set
                for unit, target in self._link_hops(path) if params.link_hops else ():
                    new = _Path(
                        order=(*path.order, unit),
                        via=(*path.via, target),
                        vector=path.vector - g.unit_vectors[unit] if params.query_update else path.vector,
                        anchors=tuple(g.unit_entities[unit]),
                    )
                    candidates.setdefault(new.key, new)
            if not candidates:
                break
            paths = list(candidates.values())
            scores = self.scorer.score_paths(self.query, qvec, [_sorted_unit_set(p.order) for p in paths])
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

    def _link_hops(self, path: _Path) -> list[tuple[int, LinkTarget]]:
        """The top-K unused units of the documents the path's last unit links to or names (the
        question's named documents for the empty path), taken together as one more anchor's
        adjacent units: by cosine with the path's vector, fused with the lexical scores as entity
        hops are, each multiplied by its link's weight (a title's specificity)."""
        edges = self.r.derived.link_edges()
        weigh = self.params.title_specificity
        if path.order:
            targets = edges.from_unit(path.order[-1], weigh_titles=weigh)
        else:
            targets = edges.from_query(self.query, weigh_titles=weigh)
        via: dict[int, LinkTarget] = {}
        for target in targets:
            for c in target.chunks:
                for u in self.graph.chunk_units[c]:
                    if u not in via or target.weight > via[u].weight:
                        via[u] = target
        if not via:
            return []
        units = list(via)
        ranked = self.r.top_units(
            units,
            path.vector,
            self.params.k,
            path.key,
            lexical=None if self.lexical is None else self.lexical.units,
            lexical_weight=self.lexical_weight,
            weights=[via[u].weight for u in units],
        )
        return [(u, via[u]) for u, _ in ranked]

    def _final_rerank(
        self, qvec: np.ndarray, collected: dict[int, float]
    ) -> tuple[list[ChunkHit], tuple[int, int, int, int], list[TitleStep]]:
        """The chunks holding the collected units and those the query names by title, reranked
        (with path evidence when path_weight > 0), then the chunks the best of them name by title,
        then those the best share a specific entity with, then the titles that chunks lifted by
        entity links name; top N. Dense hits fill up when the graph
        reached fewer. Returns the hits, the counts of candidates, named, title-linked and
        entity-linked chunks, and the link evidence applied (for the trace)."""
        g, params = self.graph, self.params
        chunk_units: dict[int, list[int]] = {}
        for unit in collected:
            for c in g.unit_chunks[unit]:
                if self.r.chunk_allowed(c):  # a unit shared with a document outside the filter
                    chunk_units.setdefault(c, []).append(unit)
        chunks = list(chunk_units)
        chunk_scores = self.scorer.score_chunks(self.query, qvec, chunks)
        if params.path_weight > 0 and chunks:
            evidence = np.asarray([max(collected[u] for u in chunk_units[c]) for c in chunks], dtype=np.float32)
            chunk_scores = (1 - params.path_weight) * chunk_scores + params.path_weight * evidence
        scores = dict(zip(chunks, chunk_scores.tolist(), strict=True))
        lexical_only: set[int] = set()
        if self.lexical is not None and self.lexical_candidates:
            # Chunks the lexical channel ranks best though no kept path reached them: with no path
            # to weigh, their own score stands for it.
            lexical = [c for c, _ in self.lexical.top_chunks(self.lexical_candidates) if c not in scores]
            lexical_only.update(lexical)
            if lexical:
                own = self.scorer.score_chunks(self.query, qvec, lexical)
                scores |= dict(zip(lexical, own.tolist(), strict=True))
        self.clock.lap("rerank")
        links = TitleEvidence(
            graph=g,
            scorer=self.scorer,
            query=self.query,
            qvec=qvec,
            params=params,
            specificity=self.r.derived.title_specificity,
            edges=self.r.derived.link_edges,
            allowed=self.r.chunk_allowed,
        )
        named = links.add_query_titles(scores) if params.query_titles else set()
        followed = links.follow(scores) if params.title_links else {}
        self.clock.lap("links")
        # Each linked chunk: the chunk it was followed from, the entity for an entity link (None
        # otherwise) and how it was linked. An entity link that raises a title-linked chunk further
        # sets its score, so each chunk counts once, under the link that set it last.
        linked: dict[int, tuple[int, str | None, LinkedKind]] = {
            c: (head, None, kind) for c, (_, head, kind) in followed.items()
        }
        entity_linked = self._entity_links(qvec, scores, links.steps)
        linked |= {c: (head, entity, "entity") for c, (head, entity) in entity_linked.items()}
        if params.entity_links:
            self.clock.lap("entity_links")
        if entity_linked and params.title_links:
            # A chain goes on across link kinds: a chunk an entity link lifted into the top has its
            # title links followed too (question -> head -> entity link -> the page it names). Only
            # top chunks not followed yet are, within the rounds the first call left.
            for c, (_, head, kind) in links.follow(scores).items():
                linked[c] = (head, None, kind)
                entity_linked.pop(c, None)
            self.clock.lap("links")
        # Last, once the best are settled: a short note's other sections, on their own scores.
        sections = links.note_sections(scores)
        linked |= {c: (head, None, kind) for c, (_, head, kind) in sections.items()}
        if params.note_chunks:
            self.clock.lap("links")
        order = best_chunks(scores, params.top_n)
        hits = [
            chunk_hit(
                g,
                c,
                scores[c],
                "graph",
                chunk_units.get(c, []),
                linked_from=linked[c][0] if c in linked else None,
                linked_via=linked[c][1] if c in linked else None,
                linked_kind=linked[c][2] if c in linked else None,
                named_in_query=c in named,
                lexical_match=c in lexical_only and c not in named and c not in linked,
            )
            for c in order
        ]
        if params.fill_with_dense and len(hits) < params.top_n:
            taken = {h.chunk_id for h in hits}
            for hit in self.r.dense(self.query, params.top_n + len(taken), vector=qvec).chunks:
                if hit.chunk_id not in taken and len(hits) < params.top_n:
                    hits.append(hit)
            self.clock.lap("fill")
        return hits, (len(scores), len(named), len(linked) - len(entity_linked), len(entity_linked)), links.steps

    def _entity_links(
        self, qvec: np.ndarray, scores: dict[int, float], steps: list[TitleStep]
    ) -> dict[int, tuple[int, str | None]]:
        """Entity links from the top `entity_links` candidates (`cuerag.retrieval.entity_links`): raises
        `scores` in place, adds a step per link to `steps`; returns, for each linked chunk, the
        chunk it was followed from and the entity's name."""
        g, n = self.graph, self.params.entity_links
        if not n or not scores:
            return {}
        found = follow_entities(
            graph=g,
            index=self.r.derived.entity_documents(),
            scorer=self.r.scorer,
            query=self.query,
            qvec=qvec,
            scores=scores,
            heads=best_chunks(scores, n),
            units_per_head=self.params.link_units,
            path_weight=self.params.path_weight,
            allowed=self.r.chunk_allowed,
            bridge=self.bridge,
            entity_vectors=self.r.entity_vectors,
        )
        for c, link in found.items():
            scores[c] = link.score
            steps.append(
                TitleStep(
                    chunk_id=g.chunk_ids[c],
                    title=g.chunk_titles[c],
                    kind="entity_link",
                    from_chunk_id=g.chunk_ids[link.head],
                    entity=g.entity_names[link.entity],
                    specificity=round(link.specificity, 4),
                    score=round(link.score, 6),
                )
            )
        return {c: (link.head, g.entity_names[link.entity]) for c, link in found.items()}

    def _path_trace(self, path: _Path, score: float) -> PathTrace:
        g = self.graph
        return PathTrace(
            unit_ids=[g.unit_ids[u] for u in path.order],
            unit_texts=[g.unit_texts[u] for u in path.order],
            via_entities=[hop.title if isinstance(hop, LinkTarget) else g.entity_names[hop] for hop in path.via],
            via_kinds=[hop.kind if isinstance(hop, LinkTarget) else "entity" for hop in path.via],
            next_anchors=[g.entity_names[e] for e in path.anchors],
            score=round(float(score), 6),
        )
