"""Entity links in Q-Iter's final rerank: from the best candidates to the passages of other documents
that share a specific entity with them, the way a title link goes to the page a passage names.

A corpus without useful titles has no title links, and the walk alone often misses a chain's next
passage: a path is ranked by its units against the whole question, and the second hop's passage
resembles the question less than the first. A best candidate's entities point at that passage
directly. Only the entities of the head's units nearest the query count (the statements that make
the head an answer), less those the question names itself: a link is a hop to what the head brings
in, and one through the question's own entity ("Dodge City" in a question about Dodge City's
airport) leads to the head's look-alikes, not to the next passage. Each entity weighs by how few
other documents mention it, on a log scale as an inverse document frequency is (`specificity`):
full for an entity the head shares with one other document, falling towards nothing at
`MAX_LINKED_DOCUMENTS`; past that it is not followed at all, as its weight would be near nothing yet
it would still bring a chunk in and cost a scan of every chunk that mentions it.

The linked chunk is read against the question plus the entity it is linked through (the bridge),
not plus the head: the next hop is about the entity the head brought in, which the question does
not name ("the spouse of Big Eyes' director": the passage that answers names Tim Burton, not Big
Eyes), and the entity's vector, unlike the head's, carries none of the head's other topics. The
entity's vector joins the question's with the weight `bridge` (0: the question alone; Q-Iter
scales it per query by one minus the lexical share). A text reranker reads the question alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from cuerag.graph.snapshot import Graph
from cuerag.graph.title_mentions import folded_words
from cuerag.retrieval.scoring import Scorer, VectorScorer, nearest_units, toward
from cuerag.text.entities import normalize_entity

# Other documents an entity may be mentioned by and still be followed: its weight is about 0.04 there.
MAX_LINKED_DOCUMENTS = 16


class EntityDocuments:
    """Per snapshot: the chunks of each entity that at least two and at most
    `MAX_LINKED_DOCUMENTS` + 1 documents mention (the only ones a link can follow), and for every
    entity how many documents mention it."""

    def __init__(self, graph: Graph) -> None:
        self.documents = np.zeros(len(graph.entity_ids), dtype=np.int64)
        self._chunks: dict[int, list[int]] = {}
        for e, units in enumerate(graph.entity_units):
            chunks = sorted({c for u in units for c in graph.unit_chunks[u]})
            self.documents[e] = len({graph.chunk_docs[c] for c in chunks})
            if 2 <= self.documents[e] <= MAX_LINKED_DOCUMENTS + 1:
                self._chunks[e] = chunks
        self.documents.flags.writeable = False

    def linkable(self, entity: int) -> list[int]:
        """The entity's chunks when a link may follow it, else none."""
        return self._chunks.get(entity, [])

    def specificity(self, entity: int) -> float:
        """In (0, 1]: 1 - log(n) / log(`MAX_LINKED_DOCUMENTS` + 2), n the documents that mention the
        entity besides the one it is followed from: 1 for one, 0.62 for three, 0.04 for the most a
        link follows. One over n (a half for two, a third for three) left an entity that a handful
        of documents share (a city, a person with a few works) too little to lift its passage over
        the walk's weakest finds; the log weighs rarity as an inverse document frequency does, and
        near the cap it is as small as one over n."""
        others = max(int(self.documents[entity]) - 1, 1)
        return 1.0 - math.log(others) / math.log(MAX_LINKED_DOCUMENTS + 2)


@dataclass(frozen=True)
class EntityLink:
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
    bridge: float = 0.0,
    entity_vectors: Callable[[Sequence[int]], np.ndarray] | None = None,
) -> dict[int, EntityLink]:
    """The entity links of `heads` (best first): for each entity of a head's `units_per_head` units
    nearest the query that the query does not name, the entity's chunk in another document, and
    below the head among the heads, that the link raises most, scored as (1 - w) · its reading +
    w · the head's score · the entity's specificity. Its reading is the reranker's score of it
    against the question, or with `bridge` > 0 and the embedder as the reranker, against the
    question plus the entity (`entity_vectors` gives the entities' vectors). A chunk keeps its
    score when that is higher. Returns each raised chunk's best link; `scores` is left as it is."""
    reach: dict[tuple[int, int], list[int]] = {}  # (head, entity) -> its chunks the link may reach
    asked = set(folded_words(query))
    for rank, head in enumerate(heads):
        # A link goes down the ranking, never to this head or a better one: a lower head may be
        # the next hop, but two heads must not raise each other.
        above = set(heads[: rank + 1])
        doc = graph.chunk_docs[head]
        nearest = nearest_units(graph, head, qvec, units_per_head)
        for e in dict.fromkeys(e for u in nearest for e in graph.unit_entities[u]):
            if _named_by(graph.entity_names[e], asked):
                continue
            chunks = [c for c in index.linkable(e) if graph.chunk_docs[c] != doc and c not in above and allowed(c)]
            if chunks:
                reach[(head, e)] = chunks
    if not reach:
        return {}
    readings = _readings(scorer, query, qvec, reach, bridge, entity_vectors)
    links: dict[int, EntityLink] = {}
    for (head, e), chunks in reach.items():
        own = readings[e]
        spec = index.specificity(e)
        evidence = path_weight * scores[head] * spec
        raised = [c for c in chunks if (1 - path_weight) * own[c] + evidence > scores.get(c, float("-inf"))]
        if not raised:
            continue
        c = max(raised, key=lambda c: (own[c], -c))
        total = (1 - path_weight) * own[c] + evidence
        if c not in links or total > links[c].score:
            links[c] = EntityLink(score=total, head=head, entity=e, specificity=spec)
    return links


def _named_by(entity: str, asked: set[str]) -> bool:
    """Whether the question names the entity: every one of its words is one of the question's
    (case and accents folded, as titles are matched), a leading article and a possessive aside as
    for an entity's identity ("the Orvane Institute" is named by "Orvane Institute's founder").
    Words are split at spaces and punctuation, so in a script written without spaces (Chinese,
    Japanese) a name is named only when the question holds it as a whole word."""
    words = folded_words(normalize_entity(entity))
    return bool(words) and asked.issuperset(words)


def _readings(
    scorer: Scorer,
    query: str,
    qvec: np.ndarray,
    reach: dict[tuple[int, int], list[int]],
    bridge: float,
    entity_vectors: Callable[[Sequence[int]], np.ndarray] | None,
) -> dict[int, dict[int, float]]:
    """Per entity linked through, the reranker's score of each chunk it may reach: against the
    question plus the entity's vector weighed by `bridge`, or against the question alone (one call
    for all) without a bridge or with a text reranker. The bridge is a vector: a cross-encoder
    would need a call per entity to read the entity's name, and that was never measured."""
    entities = list(dict.fromkeys(e for _, e in reach))
    if bridge <= 0 or entity_vectors is None or not isinstance(scorer, VectorScorer):
        targets = list(dict.fromkeys(c for chunks in reach.values() for c in chunks))
        own = dict(zip(targets, scorer.score_chunks(query, qvec, targets).tolist(), strict=True))
        return dict.fromkeys(entities, own)
    reached: dict[int, dict[int, None]] = {e: {} for e in entities}  # each entity's chunks, in order, once
    for (_, e), chunks in reach.items():
        reached[e].update(dict.fromkeys(chunks))
    readings: dict[int, dict[int, float]] = {}
    for e, vector in zip(entities, entity_vectors(entities), strict=True):
        chunks = list(reached[e])
        scored = scorer.score_chunks(query, toward(qvec, vector, bridge), chunks)
        readings[e] = dict(zip(chunks, scored.tolist(), strict=True))
    return readings
