"""Every retrieval method by name, over one retriever: Q-Iter and the baselines it is compared with
(dense, BM25, the dense+BM25 hybrid, KET-RAG's keyword channel). The one dispatch the engine, the
evaluation and the tools go through."""

from __future__ import annotations

import time
from collections.abc import Sequence

from cuerag.config import QIterParams
from cuerag.retrieval.baselines import as_result, rrf
from cuerag.retrieval.qiter import q_iter
from cuerag.retrieval.results import Method, RetrievalResult
from cuerag.retrieval.retriever import Retriever
from cuerag.text.tools import TextTools


def run_method(
    retriever: Retriever,
    question: str,
    method: Method,
    params: QIterParams,
    *,
    text: TextTools,
    entities: Sequence[str] | None = None,
) -> RetrievalResult:
    """The top `params.top_n` chunks for a question by `method`. `entities` replaces NER on the
    question for Q-Iter (an LLM's reading of its entities)."""
    if method == "qiter":
        return q_iter(retriever, question, params, entities=entities)
    if method == "dense":
        return retriever.dense(question, params.top_n)
    return _baseline(retriever, question, method, params.top_n, text)


def _baseline(retriever: Retriever, question: str, method: Method, n: int, text: TextTools) -> RetrievalResult:
    started = time.perf_counter()
    graph = retriever.graph
    bm25 = retriever.derived.lexical()
    # With a filter the in-memory baselines rank the whole corpus and keep the subset's chunks.
    wide = n if retriever.subset is None else len(graph.chunk_ids)

    def inside(ranked: list[tuple[int, float]], k: int) -> list[tuple[int, float]]:
        return [(c, s) for c, s in ranked if retriever.chunk_allowed(c)][:k]

    if method == "bm25":
        ranked = inside(bm25.ranked_chunks(question, wide), n)
    elif method == "hybrid":
        pool = 4 * n
        dense = [c for c, _ in retriever.dense_ranking(question, pool)]
        lexical = [c for c, _ in inside(bm25.ranked_chunks(question, max(pool, wide)), pool)]
        ranked = rrf([dense, lexical], n)
    else:
        keywords = retriever.derived.keywords(retriever.embedder, text)
        ranked = inside(keywords.ranked(retriever.embed_query(question), wide), n)
    return as_result(graph, retriever.corpus, question, method, ranked, started)
