"""ArchRAG's hierarchical search hands over a bounded context: a community contributes its
report (a few central chunks), not every chunk of its entities. When it contributed all of them,
the nearest communities of an upper level covered the whole corpus and ArchRAG ranked exactly
as dense retrieval."""

from __future__ import annotations

import numpy as np

from cuerag.communities.archrag import REPORT_CHUNKS, TOP_PER_LEVEL, ArchLevel, archrag_context, report_chunks
from cuerag.communities.documents import normalized
from cuerag.communities.entity_graph import EntityLayer

N = 40  # entities, each mentioned in one chunk of its own


def _layer() -> tuple[EntityLayer, np.ndarray]:
    rng = np.random.default_rng(7)
    vectors = normalized(rng.normal(size=(N, 16)).astype(np.float32))
    return EntityLayer(vectors=vectors, edges={}, entity_chunks=[[e] for e in range(N)]), vectors


def test_a_community_report_is_its_most_central_chunks() -> None:
    layer, chunk_vectors = _layer()
    centre = normalized(chunk_vectors[:10].mean(axis=0, keepdims=True))[0]
    report = report_chunks(layer, chunk_vectors, list(range(10)), centre)
    assert len(report) == REPORT_CHUNKS and set(report) <= set(range(10))
    sims = chunk_vectors[:10] @ centre
    assert sorted(report) == sorted(int(i) for i in np.argsort(-sims)[:REPORT_CHUNKS])


def test_an_all_covering_community_does_not_hand_over_the_whole_corpus() -> None:
    layer, chunk_vectors = _layer()
    everything = list(range(N))
    centre = normalized(chunk_vectors.mean(axis=0, keepdims=True))
    top = ArchLevel(
        vectors=centre,
        entities=[everything],
        reports=[report_chunks(layer, chunk_vectors, everything, centre[0])],
    )
    levels = [ArchLevel(vectors=layer.vectors, entities=[[e] for e in everything], reports=[]), top]
    context = archrag_context(layer, levels, chunk_vectors[3])
    assert 3 in context  # the entity nearest the question
    assert len(context) <= TOP_PER_LEVEL + REPORT_CHUNKS < N
