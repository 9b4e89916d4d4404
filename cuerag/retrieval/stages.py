"""Q-Iter's stages, in the order they run (the keys of `QIterTrace.stage_ms`), and the clock that
charges a query's time to them."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


# Q-Iter's stages, in the order they run: the keys of `QIterTrace.stage_ms`.
STAGES: tuple[str, ...] = (
    "embed",
    "lexical",
    "ner",
    "entity_linking",
    "anchor_units",
    "beam",
    "rerank",
    "links",
    "entity_links",
    "fill",
)


class StageClock:
    """Milliseconds per stage: each `lap` charges the time since the last one to a stage."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.ms[stage] = self.ms.get(stage, 0.0) + (now - self._last) * 1000
        self._last = now
