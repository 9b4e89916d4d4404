"""The entity layer the two seed methods (ArchRAG, LeanRAG) cluster: entities as nodes, an
attribute vector each, and co-occurrence edges.

The papers embed an LLM-written description of each entity; with no LLM, an entity's
"description" is what the corpus says of it: its attribute vector is the normalised sum of its
name's vector (stored at indexing) and the mean vector of the units that mention it.
Co-occurrence: two entities mentioned in one unit (the papers' extracted relation), counted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from cuerag.communities.documents import normalized
from cuerag.graph.snapshot import Graph

EntityVectors = Callable[[Sequence[int]], np.ndarray]
MAX_ENTITIES_PER_UNIT = 12  # a unit naming more (a list, a table row) adds no pairwise relations


@dataclass(frozen=True)
class EntityLayer:
    vectors: np.ndarray  # (n_entities, dim), normalised
    edges: dict[tuple[int, int], float]  # co-occurrence counts, a < b
    entity_chunks: list[list[int]]  # chunks whose units mention the entity


def entity_layer(graph: Graph, name_vectors: EntityVectors) -> EntityLayer:
    n = len(graph.entity_ids)
    dim = graph.unit_vectors.shape[1]
    unit_mean = np.zeros((n, dim), dtype=np.float32)
    for e, units in enumerate(graph.entity_units):
        if units:
            unit_mean[e] = graph.unit_vectors[units].mean(axis=0)
    names = name_vectors(list(range(n))) if n else np.zeros((0, dim), dtype=np.float32)
    vectors = normalized(normalized(names) + normalized(unit_mean)) if n else names
    edges: dict[tuple[int, int], float] = defaultdict(float)
    for ents in graph.unit_entities:
        uniq = sorted(set(ents))
        if len(uniq) > MAX_ENTITIES_PER_UNIT:
            continue
        for i, a in enumerate(uniq):
            for b in uniq[i + 1 :]:
                edges[(a, b)] += 1.0
    entity_chunks = [sorted({c for u in units for c in graph.unit_chunks[u]}) for units in graph.entity_units]
    return EntityLayer(vectors=vectors, edges=dict(edges), entity_chunks=entity_chunks)


def chunk_ranking(graph: Graph, qvec: np.ndarray, first: Sequence[int], n: int) -> list[tuple[int, float]]:
    """The given chunks by cosine with the question, then every other chunk by cosine (the
    evaluation asks each method for n chunks; what the method found comes first)."""
    sims = graph.chunk_vectors @ qvec
    chosen = sorted(set(first), key=lambda c: (-sims[c], c))
    rest = [int(c) for c in np.argsort(-sims, kind="stable") if int(c) not in set(chosen)]
    return [(c, float(sims[c])) for c in (chosen + rest)[:n]]
