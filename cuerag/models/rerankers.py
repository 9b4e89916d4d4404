"""Text rerankers: the embedder's own cosine (the offline default), a sentence-transformers
cross-encoder, and FlagEmbedding's reranker."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cuerag.errors import ModelLoadError
from cuerag.models.base import Embedder


class EmbedderReranker:
    """Scores a passage by the cosine between its embedding and the query's. Used when no
    cross-encoder is configured: none ships with an offline package."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self.name = f"embedder:{embedder.name}"

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        vectors = self._embedder.encode([query, *passages])
        return vectors[1:] @ vectors[0]


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder by name or path."""

    def __init__(self, name: str, *, device: str) -> None:
        from sentence_transformers import CrossEncoder

        try:
            self._model = CrossEncoder(name, device=device)
        except Exception as exc:
            raise ModelLoadError(f"cannot load cross-encoder {name!r}: {exc}") from exc
        self.name = name

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        scores = self._model.predict([(query, p) for p in passages], convert_to_numpy=True)
        return np.asarray(scores, dtype=np.float32)


class FlagRerankerAdapter:
    """FlagEmbedding's FlagReranker (e.g. BAAI/bge-reranker-v2-m3), the paper's reranker."""

    def __init__(self, name: str, *, device: str) -> None:
        try:
            from FlagEmbedding import FlagReranker
        except ImportError as exc:
            raise ModelLoadError("reranker 'flag:…' needs FlagEmbedding: pip install 'cuerag[flag]'") from exc
        try:
            self._model: Any = FlagReranker(name, use_fp16=device != "cpu", devices=device)
        except Exception as exc:
            raise ModelLoadError(f"cannot load FlagReranker {name!r}: {exc}") from exc
        self.name = f"flag:{name}"

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        scores = self._model.compute_score([[query, p] for p in passages], normalize=True)
        return np.atleast_1d(np.asarray(scores, dtype=np.float32))
