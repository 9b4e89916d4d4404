"""The model interfaces every layer above programs against (an embedder, a text reranker, NER),
with the vector conventions they share. Implementations live beside this module; `loading` picks them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

Vectors = np.ndarray  # float32, shape (n, dim), rows L2-normalised


class Embedder(Protocol):
    """Texts to L2-normalised float32 vectors."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> Vectors: ...


@dataclass(frozen=True)
class Pooled:
    """Texts as a mean-pooling embedder sees them before it divides and normalises: each text's
    last-layer token vectors summed, and how many tokens there were (special tokens included, as
    the mean counts them). `vectors` are what `encode` returns for the same texts."""

    sums: np.ndarray  # float32, shape (n, dim)
    counts: np.ndarray  # float32, shape (n,)

    @property
    def vectors(self) -> Vectors:
        return normalise(self.sums)


class PoolingEmbedder(Embedder, Protocol):
    """An embedder whose vector is the mean of its token vectors, which can give them summed."""

    max_tokens: int  # texts are cut to this many tokens, special ones included

    def pooled(self, texts: Sequence[str], *, batch_size: int = 64) -> Pooled: ...


def mean_pooling(embedder: Embedder) -> PoolingEmbedder | None:
    """The embedder as a `PoolingEmbedder`, or None when it does not pool by mean."""
    if getattr(embedder, "pooling", None) == "mean" and hasattr(embedder, "pooled"):
        return embedder  # type: ignore[return-value]
    return None


def pooling_mode(st: Any) -> str | None:
    """The pooling of a sentence-transformers model that is the plain pipeline Transformer,
    Pooling (mean or CLS), optionally Normalize; None for any other. Checked by class name:
    sentence-transformers has moved these classes between modules across versions."""
    kinds = [type(m).__name__ for m in st]
    if kinds[:2] != ["Transformer", "Pooling"] or kinds[2:] not in ([], ["Normalize"]):
        return None
    config = st[1].get_config_dict()
    mode = config.get("pooling_mode")
    if mode is None:  # sentence-transformers before 6: one boolean per mode
        flags = {
            m: config.get(f"pooling_mode_{m}_token" if m == "cls" else f"pooling_mode_{m}_tokens")
            for m in ("cls", "mean")
        }
        on = [m for m, v in flags.items() if v]
        mode = on[0] if len(on) == 1 else None
    if isinstance(mode, list | tuple) and len(mode) == 1:
        mode = mode[0]
    return str(mode) if mode in ("mean", "cls") else None


class TextReranker(Protocol):
    """Relevance of passages to a query: higher is more relevant."""

    name: str

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray: ...


class EntityRecognizer(Protocol):
    """Named-entity mentions of each text, as (surface text, label) pairs."""

    name: str

    def extract(self, texts: Sequence[str]) -> list[list[tuple[str, str]]]: ...


def normalise(vectors: np.ndarray) -> Vectors:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)
