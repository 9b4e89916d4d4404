"""ArchRAG's attributed communities and hierarchical search, without the LLM (paper §3.1–3.2).

Index, per level (Algorithm 1): augment the graph with kNN edges between similar nodes (new edges
only above the 80th percentile of the existing edges' similarities, up to the average degree per
node), cluster it with weighted hierarchical Leiden (`max_cluster_size=15`, keeping the final
clusters), make each community a node of the next level (vector: its members' mean; edges: the
member relations between communities, counted); stop below 10 communities or at level 6.
Query (§3.2.1): the k=5 nodes nearest the question on every level, each contributing what the
paper hands the LLM for it: an entity (level 0) its relations, here the chunks whose units
mention it (where the relations between the retrieved entities are stated); a community
(level ≥ 1) its report, here the REPORT_CHUNKS chunks of its entities nearest the community's
vector (an extractive report: its most central passages, chosen without the question). Adaptive filtering (§3.2.2)
ranks what every level retrieved by relevance: here the cosine with the question.

Deviations: no LLM community reports (a community's vector is its members' mean, not an embedded
report, and its report is its most central chunks); exact kNN instead of HNSW; the answer-side
LLM filtering becomes the cosine ranking. A community's report must stay a bounded summary: an
earlier version let a community contribute every chunk of its entities, and since the five
nearest communities of an upper level hold almost every entity, the candidates were the whole
corpus and ArchRAG ranked exactly as dense retrieval.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuerag.communities.docgraph import knn_edges
from cuerag.communities.documents import normalized
from cuerag.communities.entity_graph import EntityLayer, chunk_ranking
from cuerag.communities.hierarchy import hierarchical_leiden
from cuerag.graph.snapshot import Graph

PERCENTILE = 80.0
MAX_CLUSTER_SIZE = 15
STOP_BELOW = 10
MAX_LEVELS = 6
TOP_PER_LEVEL = 5
REPORT_CHUNKS = 3


@dataclass(frozen=True)
class ArchLevel:
    vectors: np.ndarray  # (n_nodes, dim)
    entities: list[list[int]]  # the entities under each node (level 0: the entity itself)
    reports: list[list[int]]  # level ≥ 1: each community's report, its most central chunks


def augmented(vectors: np.ndarray, edges: dict[tuple[int, int], float]) -> list[tuple[int, int, float]]:
    """Existing edges weighted by their endpoints' similarity, plus kNN edges above the
    percentile of those similarities (ArchRAG's attributed graph)."""
    n = len(vectors)
    sims = {k: float(vectors[k[0]] @ vectors[k[1]]) for k in edges}
    threshold = float(np.percentile(list(sims.values()), PERCENTILE)) if sims else 0.0
    degree = max(1, round(2 * len(edges) / max(n, 1)))
    out = {k: max(s, 1e-3) for k, s in sims.items()}
    for k, s in knn_edges(vectors, degree).items():
        if s >= threshold and k not in out:
            out[k] = s
    return sorted((a, b, w) for (a, b), w in out.items())


def report_chunks(layer: EntityLayer, chunk_vectors: np.ndarray, entities: list[int], centre: np.ndarray) -> list[int]:
    """A community's extractive report: the chunks of its entities nearest its vector."""
    chunks = sorted({c for e in entities for c in layer.entity_chunks[e]})
    if not chunks:
        return []
    sims = chunk_vectors[chunks] @ centre
    return [chunks[int(i)] for i in np.argsort(-sims, kind="stable")[:REPORT_CHUNKS]]


def build_archrag(layer: EntityLayer, chunk_vectors: np.ndarray) -> list[ArchLevel]:
    levels = [ArchLevel(vectors=layer.vectors, entities=[[e] for e in range(len(layer.vectors))], reports=[])]
    edges = layer.edges
    while len(levels) <= MAX_LEVELS:
        current = levels[-1]
        n = len(current.vectors)
        if n < STOP_BELOW:
            break
        h = hierarchical_leiden(n, augmented(current.vectors, edges), max_cluster_size=MAX_CLUSTER_SIZE)
        leaves = sorted(h.leaves(), key=lambda c: c.members[0])
        if len(leaves) >= n:  # nothing merged: a further level would repeat this one
            break
        home = {m: i for i, c in enumerate(leaves) for m in c.members}
        vectors = normalized(np.stack([current.vectors[c.members].mean(axis=0) for c in leaves]))
        entities = [sorted({e for m in c.members for e in current.entities[m]}) for c in leaves]
        next_edges: dict[tuple[int, int], float] = {}
        for (a, b), w in edges.items():
            ca, cb = home[a], home[b]
            if ca != cb:
                key = (min(ca, cb), max(ca, cb))
                next_edges[key] = next_edges.get(key, 0.0) + w
        reports = [report_chunks(layer, chunk_vectors, ents, v) for ents, v in zip(entities, vectors, strict=True)]
        levels.append(ArchLevel(vectors=vectors, entities=entities, reports=reports))
        edges = next_edges
    return levels


def archrag_context(layer: EntityLayer, levels: list[ArchLevel], qvec: np.ndarray) -> list[int]:
    """The chunks the hierarchical search hands over for a question: the chunks of the nearest
    entities and the reports of the nearest communities of every level above."""
    if not levels or not len(levels[0].vectors):
        return []
    chunks: set[int] = set()
    for e in np.argsort(-(levels[0].vectors @ qvec), kind="stable")[:TOP_PER_LEVEL]:
        chunks.update(layer.entity_chunks[int(e)])
    for level in levels[1:]:
        for node in np.argsort(-(level.vectors @ qvec), kind="stable")[:TOP_PER_LEVEL]:
            chunks.update(level.reports[int(node)])
    return sorted(chunks)


def archrag_search(
    graph: Graph, layer: EntityLayer, levels: list[ArchLevel], qvec: np.ndarray, n: int
) -> list[tuple[int, float]]:
    return chunk_ranking(graph, qvec, archrag_context(layer, levels, qvec), n)
