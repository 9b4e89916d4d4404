"""How Q-Iter scores candidate paths and final chunks: the reranker's place in Algorithm 4.

With a cross-encoder configured, a path is scored on the text of its sorted unit set and a chunk
on its text, as in the paper. Without one (the offline default), the scorer uses the stored
embeddings: a path is the normalised mean of its units' vectors and a chunk is its own vector,
each compared with the query vector. That costs no model call per candidate, which is what keeps
Q-Iter within a few milliseconds of the dense baseline on a CPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from cuerag.graph.snapshot import Graph
from cuerag.models.base import TextReranker, normalise


class Scorer(Protocol):
    name: str

    def score_paths(self, query: str, qvec: np.ndarray, paths: Sequence[Sequence[int]]) -> np.ndarray: ...

    def score_chunks(self, query: str, qvec: np.ndarray, chunks: Sequence[int]) -> np.ndarray: ...


class VectorScorer:
    """Scores with the embedder's stored vectors (cosine with the query)."""

    name = "embedder"

    def __init__(self, graph: Graph) -> None:
        self._graph = graph

    def score_paths(self, query: str, qvec: np.ndarray, paths: Sequence[Sequence[int]]) -> np.ndarray:
        if not paths:
            return np.zeros(0, dtype=np.float32)
        vectors = self._graph.unit_vectors
        means = np.stack([vectors[list(p)].mean(axis=0) for p in paths])
        means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)
        return means @ qvec

    def score_chunks(self, query: str, qvec: np.ndarray, chunks: Sequence[int]) -> np.ndarray:
        if not chunks:
            return np.zeros(0, dtype=np.float32)
        return self._graph.chunk_vectors[list(chunks)] @ qvec


class TextScorer:
    """Scores with a text reranker: a path as its units' texts joined in reading order."""

    def __init__(self, graph: Graph, reranker: TextReranker) -> None:
        self._graph = graph
        self._reranker = reranker
        self.name = reranker.name

    def score_paths(self, query: str, qvec: np.ndarray, paths: Sequence[Sequence[int]]) -> np.ndarray:
        texts = [" ".join(self._graph.unit_texts[u] for u in p) for p in paths]
        return np.asarray(self._reranker.score(query, texts), dtype=np.float32)

    def score_chunks(self, query: str, qvec: np.ndarray, chunks: Sequence[int]) -> np.ndarray:
        texts = [self._graph.chunk_full_text(c) for c in chunks]
        return np.asarray(self._reranker.score(query, texts), dtype=np.float32)


def nearest_units(graph: Graph, chunk: int, qvec: np.ndarray, n: int) -> list[int]:
    """The chunk's n units nearest the query, nearest first: the statements that make the chunk a
    good candidate, and so the ones its links are followed from (a long page's other sentences,
    a "see also" list, name much that has nothing to do with the question)."""
    units = graph.chunk_units[chunk]
    return [units[i] for i in np.argsort(-(graph.unit_vectors[units] @ qvec), kind="stable")[:n]]


def toward(qvec: np.ndarray, vector: np.ndarray, weight: float = 1.0) -> np.ndarray:
    """The query vector moved toward another (a naming chunk's, a linking entity's), normalised:
    how a link's next hop is read."""
    return normalise(qvec + weight * vector)[0]


def best_chunks(scores: dict[int, float], n: int) -> list[int]:
    """The n chunks with the highest scores, best first; ties go to the earlier position, so a
    ranking never depends on the order the candidates were found in."""
    return sorted(scores, key=lambda c: (-scores[c], c))[:n]


def make_scorer(graph: Graph, reranker: TextReranker | None) -> Scorer:
    return VectorScorer(graph) if reranker is None else TextScorer(graph, reranker)
