"""Communities: a theme hierarchy over a corpus and the searches that use it (issue 32).

`global` ranks documents for a broad question theme by theme (`search`); `archrag` and `leanrag`
are the two seed methods over the entity graph, implemented to be compared (their modules say
where they deviate from the papers). All are built in memory from a graph snapshot on first use
(`index.CommunityIndex`, which the engine keeps with the snapshot) and answer as `RetrievalResult`s,
like the baselines.
"""

from __future__ import annotations

import time

import numpy as np

from cuerag.communities.archrag import archrag_search
from cuerag.communities.aspects import aspect_bonus, aspect_scores, kept_first, question_aspects
from cuerag.communities.index import CommunityIndex
from cuerag.communities.leanrag import leanrag_search
from cuerag.communities.relevance import relevance
from cuerag.communities.search import document_scores, scaled
from cuerag.config import QIterParams
from cuerag.retrieval.qiter import q_iter
from cuerag.retrieval.results import Method, RetrievalResult, chunk_hit
from cuerag.retrieval.retriever import Retriever

COMMUNITY_METHODS: tuple[str, ...] = ("global", "archrag", "leanrag")

__all__ = ["COMMUNITY_METHODS", "CommunityIndex", "community_search", "global_ranking"]


# How deep the Q-Iter walk behind global search's third channel goes, in chunks.
WALK_CHUNKS = 60


def global_ranking(
    retriever: Retriever,
    index: CommunityIndex,
    question: str,
    n: int,
    params: QIterParams | None = None,
    qvec: np.ndarray | None = None,
) -> list[tuple[int, float]]:
    """The n best documents for a broad question, each as (its best chunk, the document's score);
    `qvec`: the question's vector when the caller has it already (else it is embedded here)."""
    graph = retriever.graph
    docs = index.docs
    if qvec is None:
        qvec = retriever.embed_query(question)
    walk = q_iter(retriever, question, (params or QIterParams()).model_copy(update={"top_n": max(WALK_CHUNKS, n)}))
    position = {doc: d for d, doc in enumerate(docs.doc_ids)}
    walk_docs = [position[doc] for doc in dict.fromkeys(hit.doc_id for hit in walk.chunks)]
    rel = relevance(graph, docs, retriever.lexical_scores(question).chunks, qvec, walk_docs)
    scores = document_scores(index.hierarchy, rel)
    aspects = question_aspects(question)
    if aspects:
        vectors = retriever.embed_queries(aspects)
        per_aspect = [aspect_scores(docs, graph.chunk_vectors @ v, v) for v in vectors]
        bonus = aspect_bonus(per_aspect)
        if bonus is not None:
            scores = kept_first(scores, scaled(scores) + bonus)
    out: list[tuple[int, float]] = []
    for d in np.argsort(-scores, kind="stable"):
        chunk = rel.best_chunk(docs, int(d))
        if retriever.chunk_allowed(chunk):
            out.append((chunk, float(scores[d])))
        if len(out) >= n:
            break
    return out


def community_search(
    retriever: Retriever,
    index: CommunityIndex,
    question: str,
    method: Method,
    n: int,
    params: QIterParams | None = None,
) -> RetrievalResult:
    """One of the community methods' top-n chunks for a question (`params`: the Q-Iter settings
    global search's walk uses)."""
    started = time.perf_counter()
    if method == "global":
        ranked = global_ranking(retriever, index, question, n, params)
    else:
        qvec = retriever.embed_query(question)
        wide = n if retriever.subset is None else len(retriever.graph.chunk_ids)
        if method == "archrag":
            ranked = archrag_search(retriever.graph, index.entity_layer, index.archrag, qvec, wide)
        else:
            ranked = leanrag_search(retriever.graph, index.entity_layer, index.leanrag, qvec, wide)
        ranked = [(c, s) for c, s in ranked if retriever.chunk_allowed(c)][:n]
    return RetrievalResult(
        corpus=retriever.corpus,
        query=question,
        method=method,
        chunks=[chunk_hit(retriever.graph, c, s, method) for c, s in ranked],  # type: ignore[arg-type]
        elapsed_ms=round((time.perf_counter() - started) * 1000, 2),
    )
