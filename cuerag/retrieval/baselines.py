"""Retrievers Q-Iter is compared with, over the same graph snapshot: a hybrid of dense and BM25 by
reciprocal rank fusion, and KET-RAG's LLM-free Keyword-RAG channel. BM25 itself is the snapshot's
lexical index (`cuerag.retrieval.lexical`), which Q-Iter's lexical channel reads too.

Each returns a `RetrievalResult` like Q-Iter and dense, so the evaluation treats all methods alike.
The indexes here are built in memory from the snapshot on first use and kept with it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cuerag.graph.snapshot import Graph
from cuerag.models.base import Embedder
from cuerag.retrieval.results import Method, RetrievalResult, chunk_hit
from cuerag.text.tools import TextTools

RRF_K = 60  # the constant of Cormack et al.'s reciprocal rank fusion
_WORD = re.compile(r"\w+", re.UNICODE)


def _stopwords() -> frozenset[str]:
    """bm25s's English stop list, so keywords are content words."""
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


@dataclass
class KeywordIndex:
    """KET-RAG's keyword channel: keywords are a chunk's words minus stop words; a keyword's vector
    is the mean of the embeddings of the sentences (units) that contain it; edges link keywords to
    the sub-chunks they occur in."""

    keywords: list[str]
    vectors: np.ndarray  # (n_keywords, dim), normalised
    keyword_subchunks: list[list[int]]
    subchunk_vectors: np.ndarray
    subchunk_chunk: list[int]

    @classmethod
    def build(cls, graph: Graph, embedder: Embedder, text: TextTools, *, subchunk_tokens: int = 150) -> KeywordIndex:
        stop = _stopwords()
        sub_texts: list[str] = []
        sub_chunk: list[int] = []
        reuse: list[int | None] = []  # a sub-chunk that is its whole chunk reuses the chunk vector
        for c in range(len(graph.chunk_ids)):
            pieces = text.chunk(graph.chunk_titles[c], graph.chunk_texts[c], max_tokens=subchunk_tokens, overlap=0)
            for piece in pieces:
                sub_texts.append(piece.full_text)
                sub_chunk.append(c)
                reuse.append(c if len(pieces) == 1 else None)
        sub_vectors = np.zeros((len(sub_texts), embedder.dim), dtype=np.float32)
        fresh = [i for i, r in enumerate(reuse) if r is None]
        if fresh:
            sub_vectors[fresh] = embedder.encode([sub_texts[i] for i in fresh])
        for i, r in enumerate(reuse):
            if r is not None:
                sub_vectors[i] = graph.chunk_vectors[r]

        keyword_units: dict[str, set[int]] = {}
        for u, unit_text in enumerate(graph.unit_texts):
            for word in set(_WORD.findall(unit_text.lower())):
                if word not in stop and not word.isdigit() and len(word) > 1:
                    keyword_units.setdefault(word, set()).add(u)
        keyword_subs: dict[str, set[int]] = {}
        for s, sub in enumerate(sub_texts):
            for word in set(_WORD.findall(sub.lower())):
                if word in keyword_units:
                    keyword_subs.setdefault(word, set()).add(s)
        keywords = sorted(keyword_subs)
        vectors = np.zeros((len(keywords), embedder.dim), dtype=np.float32)
        for i, k in enumerate(keywords):
            vectors[i] = graph.unit_vectors[sorted(keyword_units[k])].mean(axis=0)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return cls(
            keywords=keywords,
            vectors=vectors.astype(np.float32),
            keyword_subchunks=[sorted(keyword_subs[k]) for k in keywords],
            subchunk_vectors=sub_vectors,
            subchunk_chunk=sub_chunk,
        )

    def ranked(self, qvec: np.ndarray, n: int, *, top_keywords: int = 10) -> list[tuple[int, float]]:
        """Keywords by cosine to the query → their sub-chunks → reranked by cosine → passages."""
        if not self.keywords:
            return []
        sims = self.vectors @ qvec
        best = np.argsort(-sims, kind="stable")[:top_keywords]
        pool = sorted({s for k in best for s in self.keyword_subchunks[k]})
        scores = self.subchunk_vectors[pool] @ qvec
        out: dict[int, float] = {}
        for i in np.argsort(-scores, kind="stable"):
            chunk = self.subchunk_chunk[pool[i]]
            out.setdefault(chunk, float(scores[i]))
            if len(out) >= n:
                break
        return list(out.items())


def rrf(rankings: Sequence[Sequence[int]], n: int) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: score(d) = Σ 1 / (RRF_K + rank of d in each ranking)."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda t: (-t[1], t[0]))[:n]


def as_result(
    graph: Graph, corpus: str, query: str, method: Method, ranked: list[tuple[int, float]], started: float
) -> RetrievalResult:
    return RetrievalResult(
        corpus=corpus,
        query=query,
        method=method,
        chunks=[chunk_hit(graph, c, s, "graph" if method == "qiter" else method) for c, s in ranked],
        elapsed_ms=round((time.perf_counter() - started) * 1000, 2),
    )
