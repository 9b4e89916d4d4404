"""Indexes Q-Iter derives from one graph snapshot (BM25 over its texts, how often each title is
named), each built on first use and kept with the snapshot: a new snapshot gets new ones."""

from __future__ import annotations

import threading

from cuerag.graph import Graph
from cuerag.lexical import LexicalIndex
from cuerag.link_scoring import TitleMentions


class SnapshotIndexes:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._lock = threading.Lock()
        self._lexical: LexicalIndex | None = None
        self._mentions: TitleMentions | None = None

    def lexical(self) -> LexicalIndex:
        with self._lock:
            if self._lexical is None:
                self._lexical = LexicalIndex(self.graph)
            return self._lexical

    def title_mentions(self) -> TitleMentions:
        with self._lock:
            if self._mentions is None:
                self._mentions = TitleMentions(self.graph)
            return self._mentions
