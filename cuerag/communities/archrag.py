"""ArchRAG's attributed communities and hierarchical search, without the LLM (paper §3.1–3.2).

Index, per level (Algorithm 1): augment the graph with kNN edges between similar nodes (new edges
only above the 80th percentile of the existing edges' similarities, up to the average degree per
node), cluster it with weighted hierarchical Leiden (`max_cluster_size=15`, keeping the final
clusters), make each community a node of the next level (vector: its members' mean; edges: the
member relations between communities, counted); stop below 10 communities or at level 6.
Query: the k=5 nodes nearest the question on every level; their entities' chunks, ranked by
cosine with the question.

Deviations: no LLM community reports (a community's vector is its members' mean, not an embedded
report); exact kNN instead of HNSW; the answer-side LLM filtering becomes the cosine ranking.
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


@dataclass(frozen=True)
class ArchLevel:
    vectors: np.ndarray  # (n_nodes, dim)
    entities: list[list[int]]  # the entities under each node (level 0: the entity itself)


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


def build_archrag(layer: EntityLayer) -> list[ArchLevel]:
    levels = [ArchLevel(vectors=layer.vectors, entities=[[e] for e in range(len(layer.vectors))])]
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
        levels.append(ArchLevel(vectors=vectors, entities=entities))
        edges = next_edges
    return levels


def archrag_search(
    graph: Graph, layer: EntityLayer, levels: list[ArchLevel], qvec: np.ndarray, n: int
) -> list[tuple[int, float]]:
    chunks: set[int] = set()
    for level in levels:
        sims = level.vectors @ qvec
        for node in np.argsort(-sims, kind="stable")[:TOP_PER_LEVEL]:
            for e in level.entities[int(node)]:
                chunks.update(layer.entity_chunks[e])
    return chunk_ranking(graph, qvec, sorted(chunks), n)
