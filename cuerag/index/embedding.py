"""The vectors of one index run: texts embedded in slices (similar lengths together, a stop check
before and progress after each), or chunk vectors derived from their units' token sums
(`chunk_vectors=derived`, see `cuerag.index.chunk_vectors`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from cuerag.config import Settings
from cuerag.graph.ids import unit_point_id
from cuerag.graph.snapshot import Graph
from cuerag.index.chunk_vectors import DERIVED, derive_chunk_vectors, stacked
from cuerag.index.report import Progress
from cuerag.index.run_plan import RunPlan
from cuerag.index.stamps import chunk_vectors_mode
from cuerag.models.base import Pooled, PoolingEmbedder, mean_pooling
from cuerag.models.loading import Models

EMBED_SLICE = 512  # texts per slice: a stop check before, progress after each (NER slices alike)


def _part_rows(parts: tuple[str, list[str]], row: dict[str, int]) -> list[int]:
    """The pooled rows of a chunk's head (when it has one) and of its sentences, in order."""
    head, sentences = parts
    return ([row[f"head:{head}"]] if head else []) + [row[unit_point_id(s)] for s in sentences]


class Embedding:
    """Embeds for one run; `checkpoint` raises when the caller asked the run to stop."""

    def __init__(self, settings: Settings, models: Models, checkpoint: Callable[[str], None]) -> None:
        self.settings = settings
        self.models = models
        self.checkpoint = checkpoint

    def embed(
        self, stage: str, texts: list[str], progress: Progress, between: Callable[[], None] | None = None
    ) -> np.ndarray:
        """Vectors of `texts`; `between` runs after each slice (it reports the NER worker's
        progress while this thread embeds)."""
        embedder = self.models.embedder
        out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
        for rows in self._slices(stage, texts, progress, between):
            out[rows] = embedder.encode([texts[i] for i in rows], batch_size=self.settings.embed_batch_size)
        return out

    def pooled(
        self,
        pooler: PoolingEmbedder,
        stage: str,
        texts: list[str],
        progress: Progress,
        between: Callable[[], None] | None = None,
    ) -> Pooled:
        """The token sums and counts of `texts` (`embed` for a derivation's parts)."""
        sums = np.zeros((len(texts), pooler.dim), dtype=np.float32)
        counts = np.zeros(len(texts), dtype=np.float32)
        for rows in self._slices(stage, texts, progress, between):
            part = pooler.pooled([texts[i] for i in rows], batch_size=self.settings.embed_batch_size)
            sums[rows], counts[rows] = part.sums, part.counts
        return Pooled(sums, counts)

    def _slices(
        self, stage: str, texts: list[str], progress: Progress, between: Callable[[], None] | None
    ) -> Iterator[list[int]]:
        """The rows of `texts` in slices to embed, with a stop check before and progress after
        each. Texts of similar length share a batch, so little time goes into padding."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(texts), EMBED_SLICE):
            self.checkpoint(f"while embedding ({stage})")
            yield order[start : start + EMBED_SLICE]
            progress(stage, min(start + EMBED_SLICE, len(texts)), len(texts))
            if between is not None:
                between()

    def deriving(self) -> PoolingEmbedder | None:
        """The embedder to derive chunk vectors with, or None when chunks are embedded whole."""
        if chunk_vectors_mode(self.settings, self.models) != DERIVED:
            return None
        return mean_pooling(self.models.embedder)

    def derived(
        self, pooler: PoolingEmbedder, plan: RunPlan, graph: Graph, progress: Progress, between: Callable[[], None]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Unit vectors, and chunk vectors derived from them (cuerag.index.chunk_vectors): the new units'
        token sums come with their vectors; the units already stored that a new chunk holds and the
        chunks' heads are pooled here (short texts); a chunk whose units came from the LLM is
        embedded whole."""
        new = list(plan.unit_texts.items())
        units = self.pooled(pooler, "embed units", [t for _, t in new], progress, between)
        row = {uid: n for n, (uid, _) in enumerate(new)}
        extra: dict[str, str] = {}  # units stored before, and heads: pooled below, rows after the new units'
        for parts in plan.chunk_parts:
            if parts is None:
                continue
            head, sentences = parts
            for key, text in ((f"head:{head}", head), *((unit_point_id(s), s) for s in sentences)):
                if text and key not in row and key not in extra:
                    extra[key] = text
        row.update({key: len(new) + n for n, key in enumerate(extra)})
        pooled = stacked(units, self.pooled(pooler, "embed chunk parts", list(extra.values()), progress, between))
        rows = [[] if parts is None else _part_rows(parts, row) for parts in plan.chunk_parts]
        # Within the model's window, as an embedded chunk is cut there: the same text counts.
        chunk_vecs = derive_chunk_vectors(rows, pooled, max_tokens=pooler.max_tokens)
        # A chunk with nothing to derive from (no title or heading, every sentence dropped as
        # punctuation) would get an all-zero vector: it is embedded whole, as `embedded` does.
        whole = [n for n, parts in enumerate(plan.chunk_parts) if parts is None or not rows[n]]
        if whole:
            chunk_vecs[whole] = self.embed("embed chunks", [plan.chunk_texts[n] for n in whole], progress, between)
        return units.vectors, chunk_vecs
