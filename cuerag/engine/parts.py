"""What the engine's operations share: the settings, the store, the snapshots, the models (loaded
on first use), the LLM and the text tools. `CueRag` builds one and hands it to its index runs and
queries, so each of those modules sees what it uses and nothing of the facade."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from cuerag.config import Settings
from cuerag.engine.compat import VectorChecks
from cuerag.engine.snapshots import Snapshots
from cuerag.llm.client import LLM
from cuerag.models.loading import Models
from cuerag.store.base import VectorStore
from cuerag.store.diskspace import FreeBytes
from cuerag.text.tools import TextTools


@dataclass
class EngineParts:
    settings: Settings
    snapshots: Snapshots
    llm: LLM | None
    free_bytes: FreeBytes  # the data directory's free space (tests pass a full disk)
    load: Callable[[Settings], Models]
    text: TextTools = field(default_factory=TextTools)
    checks: VectorChecks = field(default_factory=VectorChecks)
    loaded: Models | None = None
    _models_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def store(self) -> VectorStore:
        return self.snapshots.store

    @property
    def models(self) -> Models:
        """The embedder, reranker and NER model, loaded on first use: listing, counting, deleting
        and dropping need none, and loading them costs seconds."""
        if self.loaded is None:
            with self._models_lock:
                if self.loaded is None:
                    self.loaded = self.load(self.settings)
        return self.loaded
