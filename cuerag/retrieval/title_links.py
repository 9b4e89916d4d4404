"""Title-link scoring in Q-Iter's final rerank: the chunks a question names by title, the chunks
the best candidates name (a wiki's hyperlinks, recovered by matching titles; see
`cuerag.graph.title_mentions`) or, with `linked_documents`, link to (their stored hyperlinks and
wikilinks), and with `note_chunks` the other sections of a short note one of the best is part of.

Each raises a chunk's score in the candidate table the final rerank builds; none walks the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from cuerag.config import QIterParams
from cuerag.graph.snapshot import Graph
from cuerag.graph.title_mentions import MAX_TARGET_CHUNKS, Named, TitleSpecificity
from cuerag.retrieval.link_edges import LinkEdges
from cuerag.retrieval.results import LinkedKind, TitleStep
from cuerag.retrieval.scoring import Scorer, best_chunks, nearest_units, toward

# The path evidence of a chunk the query names by its title: an exact link, the top of the scale of
# both scorers (cosine, and a cross-encoder's sigmoid; a reranker giving raw logits can score a
# path higher, which is why a named chunk keeps the better of the two scores).
EXACT_LINK = 1.0
# Rounds of title links: a link that lifts a chunk into the top ones has that chunk's links followed
# in turn, so a chain of passages (question -> A -> B -> C) is walked. Chains on the shared samples
# need two rounds at most; the cap bounds the work on a corpus whose titles link densely.
MAX_LINK_ROUNDS = 4


def scored_once(
    score: Callable[[str, np.ndarray, Sequence[int]], np.ndarray],
    query: str,
    vector: np.ndarray,
    named: Sequence[Named],
) -> dict[int, float]:
    """Each chunk of the named titles scored once."""
    chunks = list(dict.fromkeys(c for title in named for c in title.chunks))
    return dict(zip(chunks, score(query, vector, chunks).tolist(), strict=True))


class TitleEvidence:
    """Title evidence for one query over one graph snapshot."""

    def __init__(
        self,
        *,
        graph: Graph,
        scorer: Scorer,
        query: str,
        qvec: np.ndarray,
        params: QIterParams,
        specificity: Callable[[], TitleSpecificity],
        edges: Callable[[], LinkEdges],
        allowed: Callable[[int], bool] = lambda _: True,
    ) -> None:
        self._graph = graph
        self._allowed = allowed  # chunks outside a filter's subset are never named or linked
        self._specificity = specificity
        self._edges = edges  # the stored hyperlinks and each document's chunks
        self._scorer = scorer
        self._query = query
        self._qvec = qvec
        self._params = params
        self.steps: list[TitleStep] = []  # what title evidence did, for the trace
        self._followed: set[int] = set()  # heads whose title links were followed, over every call
        self._rounds = 0  # rounds followed, over every call: MAX_LINK_ROUNDS bounds the query

    def add_query_titles(self, scores: dict[int, float]) -> set[int]:
        """For each title the query names, its chunk closest to the query joins the candidates with
        the path evidence of an exact link (the query itself points at that passage), weighed by
        the title's specificity in the corpus. Returns them."""
        named = self._inside(self._graph.title_index.named_in(self._query))
        if not named:
            return set()
        own = scored_once(self._scorer.score_chunks, self._query, self._qvec, named)
        w = self._params.path_weight
        best: set[int] = set()
        for title in named:
            c = max(title.chunks, key=lambda c: (own[c], -c))
            specificity = self._weight(title.title)
            evidence = (1 - w) * own[c] + w * EXACT_LINK * specificity
            scores[c] = max(scores.get(c, float("-inf")), evidence)
            self._step(c, "named_in_query", None, specificity, evidence)
            best.add(c)
        return best

    def _inside(self, named: Sequence[Named]) -> list[Named]:
        """The named titles with only their chunks inside the subset; titles with none inside go."""
        out = []
        for title in named:
            inside = [c for c in title.chunks if self._allowed(c)]
            if inside:
                out.append(Named(title=title.title, chunks=inside))
        return out

    def _step(
        self,
        c: int,
        kind: Literal["named_in_query", "title_link", "hyperlink", "note_section"],
        head: int | None,
        spec: float,
        score: float,
    ) -> None:
        g = self._graph
        self.steps.append(
            TitleStep(
                chunk_id=g.chunk_ids[c],
                title=g.chunk_titles[c],
                kind=kind,
                from_chunk_id=None if head is None else g.chunk_ids[head],
                specificity=round(spec, 4),
                score=round(score, 6),
            )
        )

    def _weight(self, title: int, *, besides: int = 0) -> float:
        """The title's specificity in the corpus (1 with `title_specificity` off)."""
        return self._specificity().of(title, besides=besides) if self._params.title_specificity else 1.0

    def follow(self, scores: dict[int, float]) -> dict[int, tuple[float, int, LinkedKind]]:
        """Title links from the top `title_links` candidates (see `_links_from`). When the links lift
        a chunk into the top ones, its links are followed in turn, until the top ones have all been
        followed (at most `MAX_LINK_ROUNDS` rounds in all). Each head is followed once per query:
        a later call (after entity links changed the top) follows only the new top chunks, so a
        head's links never count its own raised score. Raises `scores` in place; returns each
        chunk this call linked, with its score, the chunk that named or linked it and how."""
        linked: dict[int, tuple[float, int, LinkedKind]] = {}
        followed = self._followed
        while self._rounds < MAX_LINK_ROUNDS:
            top = best_chunks(scores, self._params.title_links)
            heads = [c for c in top if c not in followed]
            if not heads:
                break
            self._rounds += 1
            followed.update(heads)
            for c, (score, head, specificity, kind) in self._links_from(heads, scores).items():
                linked[c] = (score, head, kind)
                scores[c] = score
                self._step(c, "title_link" if kind == "title" else "hyperlink", head, specificity, score)
        return linked

    def _hyperlinked(self, head: int, units: Sequence[int], named: Sequence[Named]) -> list[list[int]]:
        """The chunks of each document the units hyperlink or wikilink to (`linked_documents`), other
        than the head's own and those a named title already leads to, inside the subset."""
        if not self._params.linked_documents:
            return []
        g, edges = self._graph, self._edges()
        reached = {c for title in named for c in title.chunks}
        out: list[list[int]] = []
        seen = {g.chunk_docs[head]}
        for doc in dict.fromkeys(d for u in units for d in edges.hyperlinks(u)):
            if doc in seen:
                continue
            seen.add(doc)
            chunks = [c for c in edges.document_chunks(doc)[:MAX_TARGET_CHUNKS] if self._allowed(c)]
            if chunks and not reached.issuperset(chunks):
                out.append(chunks)
        return out

    def _links_from(
        self, heads: Sequence[int], scores: dict[int, float]
    ) -> dict[int, tuple[float, int, float, LinkedKind]]:
        """For each title the heads name, its chunk that best fits the next hop of a chain: scored
        against the query plus the naming chunk (as multi-hop dense retrieval reads a passage with
        the question; a text reranker reads the query followed by the naming chunk's title), mixed
        with the naming chunk's score raised by `link_boost`. A chunk that is a candidate already
        takes its link score only when that is higher: the beam may reach the next passage through
        a weak path. Returns each such chunk's best link score, the head that named it and the
        title's specificity (1 for a hyperlink: an author's link, as a hop along it weighs)."""
        g = self._graph
        w = self._params.path_weight
        linked: dict[int, tuple[float, int, float, LinkedKind]] = {}
        for head in heads:
            # Only the titles named in the head's units nearest the query, as for entity links.
            nearest = sorted(nearest_units(g, head, self._qvec, self._params.link_units))
            text = "\n".join(g.unit_texts[u] for u in nearest)
            named = self._inside(g.title_index.named_in(text, exclude_titles_of=head))
            targets: list[tuple[list[int], float, LinkedKind]] = [
                (title.chunks, self._weight(title.title, besides=1), "title") for title in named
            ]
            targets += [(chunks, 1.0, "hyperlink") for chunks in self._hyperlinked(head, nearest, named)]
            if not targets:
                continue
            hop = toward(self._qvec, g.chunk_vectors[head])
            chunks = [Named(title=-1, chunks=t[0]) for t in targets]
            own = scored_once(self._scorer.score_chunks, f"{self._query} {g.chunk_titles[head]}", hop, chunks)
            for target, specificity, kind in targets:
                # The target's chunk that fits the hop best, even when another chunk of it is a
                # candidate already: passages that share a title hold different facts.
                c = max(target, key=lambda c: (own[c], -c))
                total = (1 - w) * own[c] + w * (1 + self._params.link_boost) * scores[head] * specificity
                if total <= scores.get(c, float("-inf")):
                    continue  # the chunk scores better as it is
                if c not in linked or total > linked[c][0]:
                    linked[c] = (total, head, specificity, kind)
        return linked

    def note_sections(self, scores: dict[int, float]) -> dict[int, tuple[float, int, LinkedKind]]:
        """With `note_chunks`, the other chunks of each top candidate's document when it has at most
        that many: a short note's sections are one answer split up, and the walk reaches the one
        nearest the question, not always the one that answers it (an incident's "what happened"
        and not its "root cause"). Each joins on its own score, as a lexical candidate does: the
        head's being among the best brings it in, and its own text decides where it ranks. Adds them
        to `scores`; returns each with its score, its head and its kind."""
        g, cap = self._graph, self._params.note_chunks
        if not cap:
            return {}
        edges = self._edges()
        joined: dict[int, tuple[float, int, LinkedKind]] = {}
        for head in best_chunks(scores, self._params.top_n):
            siblings = edges.document_chunks(g.chunk_docs[head])
            if len(siblings) > cap:
                continue
            new = [c for c in siblings if c not in scores and c not in joined and self._allowed(c)]
            if not new:
                continue
            for c, score in zip(new, self._scorer.score_chunks(self._query, self._qvec, new).tolist(), strict=True):
                joined[c] = (score, head, "note_section")
        for c, (score, head, _) in joined.items():
            scores[c] = score
            self._step(c, "note_section", head, 1.0, score)
        return joined
