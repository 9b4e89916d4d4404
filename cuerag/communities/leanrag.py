"""LeanRAG's semantic aggregation and lowest-common-ancestor retrieval, without the LLM.

Index, layer by layer (paper §3.1; authors' code): cluster the layer's node vectors with a
Gaussian mixture (scikit-learn, full covariance, hard assignment), the number of clusters
max(N // 20, the BIC-best count up to 50), so about 20 members per cluster; each cluster becomes
an aggregate node (vector: its members' mean) of the next layer; stop at 20 nodes or fewer.
Query: the 10 entities nearest the question are the seeds; climb from the seeds to the lowest
common ancestor of each pair, gathering the aggregate nodes on those paths; return first the
chunks that hold the most seed entities, then the chunks of the entities under the gathered nodes
(lowest first), each group by cosine with the question.

Deviations: PCA to 8 dimensions instead of UMAP to 2 (no extra dependency; deterministic); BIC
tried at a few counts (2, 4, 8, ..., 50) rather than every count; no LLM-written aggregate
descriptions or inter-cluster relations (the LCA paths need only the tree).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from cuerag.communities.documents import normalized
from cuerag.communities.entity_graph import EntityLayer, chunk_ranking
from cuerag.graph.snapshot import Graph

MEMBERS = 20
MAX_BIC_CLUSTERS = 50
SEEDS = 10
SEED = 0


@dataclass(frozen=True)
class LeanTree:
    parent: list[int]  # node -> parent node (-1 at the top); nodes 0..n_entities-1 are entities
    level: list[int]
    entities: list[list[int]]  # the entities under each node


def gmm_clusters(vectors: np.ndarray) -> np.ndarray:
    """Hard cluster labels of the rows, about MEMBERS per cluster (BIC may ask for more)."""
    from sklearn.decomposition import PCA
    from sklearn.mixture import GaussianMixture

    n = len(vectors)
    dims = min(8, n - 1, vectors.shape[1])
    reduced = PCA(n_components=dims, random_state=SEED).fit_transform(vectors) if dims >= 1 else vectors
    floor = max(2, n // MEMBERS)
    best_k, best_bic = floor, np.inf
    k = 2
    while k <= min(MAX_BIC_CLUSTERS, n - 1):
        bic = GaussianMixture(k, random_state=SEED, n_init=1, reg_covar=1e-4).fit(reduced).bic(reduced)
        if bic < best_bic:
            best_k, best_bic = k, bic
        k *= 2
    count = min(max(floor, best_k), n - 1)
    labels = GaussianMixture(count, random_state=SEED, n_init=1, reg_covar=1e-4).fit_predict(reduced)
    _, dense = np.unique(labels, return_inverse=True)  # empty components dropped
    return dense


def build_leanrag(layer: EntityLayer) -> LeanTree:
    n = len(layer.vectors)
    parent = [-1] * n
    level = [0] * n
    entities = [[e] for e in range(n)]
    current = list(range(n))
    vectors = layer.vectors
    depth = 0
    while len(current) > MEMBERS:
        labels = gmm_clusters(vectors)
        count = int(labels.max()) + 1
        if count >= len(current):
            break
        depth += 1
        first = len(parent)
        new_vectors = []
        for k in range(count):
            members = [current[i] for i in np.flatnonzero(labels == k)]
            node = first + k
            for m in members:
                parent[m] = node
            parent.append(-1)
            level.append(depth)
            entities.append(sorted({e for m in members for e in entities[m]}))
            new_vectors.append(vectors[np.flatnonzero(labels == k)].mean(axis=0))
        current = list(range(first, first + count))
        vectors = normalized(np.stack(new_vectors))
    return LeanTree(parent=parent, level=level, entities=entities)


def _ancestors(tree: LeanTree, node: int) -> list[int]:
    out = [node]
    while tree.parent[out[-1]] != -1:
        out.append(tree.parent[out[-1]])
    return out


def leanrag_search(
    graph: Graph, layer: EntityLayer, tree: LeanTree, qvec: np.ndarray, n: int
) -> list[tuple[int, float]]:
    if not len(layer.vectors):
        return chunk_ranking(graph, qvec, [], n)
    seeds = [int(e) for e in np.argsort(-(layer.vectors @ qvec), kind="stable")[:SEEDS]]
    paths = {s: _ancestors(tree, s) for s in seeds}
    gathered: set[int] = set()
    for i, a in enumerate(seeds):
        for b in seeds[i + 1 :]:
            common = set(paths[b])
            lca_at = next((j for j, node in enumerate(paths[a]) if node in common), len(paths[a]) - 1)
            lca = paths[a][lca_at]
            gathered.update(paths[a][1 : lca_at + 1])
            gathered.update(paths[b][1 : paths[b].index(lca) + 1] if lca in paths[b] else [])
    holding = Counter(c for s in seeds for c in layer.entity_chunks[s])
    sims = graph.chunk_vectors @ qvec
    first = sorted(holding, key=lambda c: (-holding[c], -sims[c], c))
    seen = set(first)
    for node in sorted(gathered, key=lambda x: (tree.level[x], x)):
        group = sorted(
            {c for e in tree.entities[node] for c in layer.entity_chunks[e]} - seen, key=lambda c: (-sims[c], c)
        )
        first.extend(group)
        seen.update(group)
    ranked = [(c, float(sims[c])) for c in first[:n]]
    if len(ranked) < n:
        ranked += [x for x in chunk_ranking(graph, qvec, [], n) if x[0] not in seen][: n - len(ranked)]
    return ranked
