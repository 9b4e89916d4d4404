"""Entity links in Q-Iter's final rerank: from the best candidates to the passages of other documents
that share a specific entity with them, the way a title link goes to the page a passage names.

A corpus without useful titles has no title links, and the walk alone often misses a chain's next
passage: a path is ranked by its units against the whole question, and the second hop's passage
resembles the question less than the first. A best candidate's entities point at that passage
directly. Only the entities of the head's units nearest the query count (the sentences that make
the head an answer), and each weighs one over the number of other documents that mention it: an
entity the head shares with one other document points at that document; one that ten share, at
none of them. The linked chunk is read against the question alone, not the head, so a passage
that merely resembles the head (the same topic) gains nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from cuerag.graph import Graph
from cuerag.scoring import Scorer


class EntityDocuments:
    """Per snapshot: each entity's chunks, and how many documents mention it."""

    def __init__(self, graph: Graph) -> None:
        self.chunks: list[list[int]] = [
            sorted({c for u in units for c in graph.unit_chunks[u]}) for units in graph.entity_units
        ]
        self.documents = np.asarray([len({graph.chunk_docs[c] for c in cs}) for cs in self.chunks], dtype=np.int64)

    def specificity(self, entity: int) -> float:
        """In (0, 1]: one over the documents that mention the entity besides the one it is followed
        from."""
        return 1.0 / max(int(self.documents[entity]) - 1, 1)


@dataclass(frozen=True)
class EntityLink:
    chunk: int
    score: float
    head: int  # the candidate the link is followed from
    entity: int
    specificity: float


def follow_entities(
    *,
    graph: Graph,
    index: EntityDocuments,
    scorer: Scorer,
    query: str,
    qvec: np.ndarray,
    scores: dict[int, float],
    heads: Sequence[int],
    units_per_head: int,
    path_weight: float,
    allowed: Callable[[int], bool],
) -> dict[int, EntityLink]:
    """The entity links of `heads`: for each entity of a head's `units_per_head` units nearest the
    query, the entity's chunk in another document that fits the query best, scored as
    (1 - w) · its own score + w · the head's score · the entity's specificity. A chunk keeps its
    score when that is higher. Returns each raised chunk's best link; `scores` is left as it is."""
    norm = float(np.linalg.norm(qvec)) or 1.0
    reach: dict[tuple[int, int], list[int]] = {}  # (head, entity) -> its chunks in other documents
    for head in heads:
        units = graph.chunk_units[head]
        if not units:
            continue
        cosine = graph.unit_vectors[units] @ qvec / norm
        nearest = [units[i] for i in np.argsort(-cosine, kind="stable")[:units_per_head]]
        doc = graph.chunk_docs[head]
        for e in dict.fromkeys(e for u in nearest for e in graph.unit_entities[u]):
            chunks = [c for c in index.chunks[e] if graph.chunk_docs[c] != doc and allowed(c)]
            if chunks:
                reach[(head, e)] = chunks
    if not reach:
        return {}
    targets = list(dict.fromkeys(c for chunks in reach.values() for c in chunks))
    own = dict(zip(targets, scorer.score_chunks(query, qvec, targets).tolist(), strict=True))
    links: dict[int, EntityLink] = {}
    for (head, e), chunks in reach.items():
        c = max(chunks, key=lambda c: (own[c], -c))
        spec = index.specificity(e)
        total = (1 - path_weight) * own[c] + path_weight * scores[head] * spec
        if total > scores.get(c, float("-inf")) and (c not in links or total > links[c].score):
            links[c] = EntityLink(chunk=c, score=total, head=head, entity=e, specificity=spec)
    return links
