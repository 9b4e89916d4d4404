"""Chunk vectors derived from their parts (`chunk_vectors=derived`) instead of embedded whole.

A mean-pooling embedder (the shipped MiniLM) makes a text's vector by averaging its last layer's
token vectors and L2-normalising the mean. The mean over all of a chunk's tokens is the
token-count-weighted mean of its parts' means: the sum of the parts' token sums over the sum of
their counts, and the normalisation drops the division. So a chunk's derived vector is the
normalised sum of the token sums of its head (title and heading path, embedded on its own: a few
tokens) and of its units (its sentences, whose vectors the index computes anyway, in the same pass
that gives their sums: `PoolingEmbedder.pooled`). The chunk is never run through the model whole.

What it leaves out is attention across sentence boundaries (a token's vector in its sentence, not
in its chunk), and each part brings its own [CLS] and [SEP]. An embedded chunk is also cut at the
model's window (256 tokens for the MiniLM) while a derived one covers all its units unless
`max_tokens` is given. How close the two come and what it does to recall: docs/performance.md, "Embedder speed
and precision".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cuerag.models.base import Pooled, normalise

DERIVED = "derived"
EMBEDDED = "embedded"


def derive_chunk_vectors(
    parts: Sequence[Sequence[int]], pooled: Pooled, *, max_tokens: int | None = None
) -> np.ndarray:
    """One L2-normalised vector per chunk from the rows of `pooled` it is made of, in the chunk's
    order (its head first, then its units, a unit as often as the chunk holds it). With
    `max_tokens`, only the chunk's first that many tokens count, as when the whole chunk is cut at
    the model's window: the part that crosses the limit counts in proportion to what is left."""
    out = np.zeros((len(parts), pooled.sums.shape[1]), dtype=np.float32)
    for n, rows in enumerate(parts):
        if not rows:
            continue
        weights = np.ones(len(rows), dtype=np.float32)
        if max_tokens is not None:
            counts = pooled.counts[list(rows)]
            before = np.concatenate([[0.0], np.cumsum(counts)[:-1]])
            weights = np.clip((max_tokens - before) / np.maximum(counts, 1.0), 0.0, 1.0).astype(np.float32)
        out[n] = weights @ pooled.sums[list(rows)]
    return normalise(out)


def stacked(*pooled: Pooled) -> Pooled:
    """Several `Pooled` as one, rows in order."""
    return Pooled(np.concatenate([p.sums for p in pooled]), np.concatenate([p.counts for p in pooled]))
