"""How relevant each document is to a question: the evidence global search ranks documents and
communities with.

Three document rankings fused by reciprocal rank fusion (no score calibration needed between
channels or corpora): dense (a document's best chunk cosine), BM25 (its best chunk's score) and
Q-Iter's (the order in which its walk returns the documents: the graph evidence, entities and
title links, that the two flat channels lack). Measured on the SQLite global set, each channel
alone ranks documents worse than the fusion; a document-mean vector and BM25 over whole
documents were tried as further channels and made it worse.

The dense channel is corrected for generality: a broad question ("which pages cover X?") is
itself general, so by cosine it matches best the pages that are about the corpus as a whole
(overviews, tutorials, FAQs, glossaries) whatever X is, and they crowd out the specific pages a
theme is made of. The question's component along the corpus's mean document vector (the
direction every page shares) is removed before the cosine: a document scores d·q − (q·c)(d·c),
c the normalised mean, with no weight to tune. Measured on the SQLite and Git global sets
(docs/global.md): dense alone gains 0.04–0.11 recall at 10 and 20; a fixed penalty
(d·q − λ·d·c, λ 0.4–0.6) measures the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cuerag.communities.documents import DocTable
from cuerag.graph.snapshot import Graph

RRF_K = 60


def rank_positions(scores: np.ndarray) -> np.ndarray:
    """Each item's 1-based rank under descending scores (ties by position)."""
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


def rrf_scores(channels: Sequence[np.ndarray]) -> np.ndarray:
    """Reciprocal rank fusion of several score vectors over the same items."""
    total = np.zeros(len(channels[0]), dtype=np.float64)
    for scores in channels:
        total += 1.0 / (RRF_K + rank_positions(scores))
    return total


def per_doc_max(values: np.ndarray, chunk_doc: np.ndarray, n_docs: int) -> np.ndarray:
    out = np.full(n_docs, -np.inf, dtype=np.float64)
    np.maximum.at(out, chunk_doc, values.astype(np.float64))
    out[np.isneginf(out)] = 0.0
    return out


@dataclass(frozen=True)
class Relevance:
    """One question's evidence: per chunk (dense, lexical) and per document (fused)."""

    chunk_dense: np.ndarray
    chunk_lexical: np.ndarray
    doc: np.ndarray  # fused document relevance (RRF; higher is better)

    def best_chunk(self, docs: DocTable, d: int) -> int:
        """The document's chunk the question matches best (dense and lexical ranks fused)."""
        chunks = docs.doc_chunks[d]
        if len(chunks) == 1:
            return chunks[0]
        fused = rrf_scores([self.chunk_dense[chunks], self.chunk_lexical[chunks]])
        return chunks[int(np.argmax(fused))]


def corpus_direction(docs: DocTable) -> np.ndarray:
    """The corpus's mean document vector, normalised (zeros for an empty corpus)."""
    if not len(docs) or not docs.vectors.shape[1]:
        return np.zeros(docs.vectors.shape[1], dtype=np.float32)
    centre = docs.vectors.mean(axis=0)
    norm = float(np.linalg.norm(centre))
    return (centre / norm).astype(np.float32) if norm > 0 else np.zeros_like(centre)


def specific_dense(docs: DocTable, dense: np.ndarray, qvec: np.ndarray) -> np.ndarray:
    """Documents' dense scores with the question's component along the corpus direction
    removed: d·q − (q·c)(d·c) (what every page shares no longer counts)."""
    direction = corpus_direction(docs)
    return dense - float(qvec @ direction) * (docs.vectors @ direction).astype(np.float64)


def ranking_scores(order: Sequence[int], tiebreak: np.ndarray) -> np.ndarray:
    """A ranking as scores: ranked items above all others, the others ordered by `tiebreak`."""
    scores = np.asarray(tiebreak, dtype=np.float64) * 1e-6
    for rank, item in enumerate(order):
        scores[item] += len(order) - rank + 1.0
    return scores


def relevance(
    graph: Graph, docs: DocTable, chunk_lexical: np.ndarray, qvec: np.ndarray, walk_docs: Sequence[int] = ()
) -> Relevance:
    """The question's document relevance from its chunk cosines, its chunk BM25 scores (scaled)
    and, when given, the documents (positions) a Q-Iter walk returned, in its order."""
    n = len(docs)
    chunk_dense = graph.chunk_vectors @ qvec
    dense = per_doc_max(chunk_dense, docs.chunk_doc, n)
    channels = [specific_dense(docs, dense, qvec), per_doc_max(chunk_lexical, docs.chunk_doc, n)]
    if walk_docs:
        channels.append(ranking_scores(walk_docs, dense))
    return Relevance(chunk_dense=chunk_dense, chunk_lexical=chunk_lexical, doc=rrf_scores(channels))
