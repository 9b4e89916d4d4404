"""Indexes derived from one graph snapshot (BM25 over its texts, how often each title is named, its
documents), each built on first use and kept with the snapshot: a new snapshot gets new ones."""

from __future__ import annotations

import threading

from cuerag.catalog import DocumentTable, catalog
from cuerag.graph import Graph
from cuerag.lexical import LexicalIndex
from cuerag.link_scoring import TitleMentions


class SnapshotIndexes:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._lock = threading.Lock()
        self._lexical: LexicalIndex | None = None
        self._mentions: TitleMentions | None = None
        self._documents: DocumentTable | None = None

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

    def documents(self) -> DocumentTable:
        """The snapshot's documents, for listings and for resolving filters."""
        with self._lock:
            if self._documents is None:
                chunks = self.graph.points.chunks.values() if self.graph.points is not None else ()
                self._documents = DocumentTable(infos=catalog(chunks), positions=self.graph.doc_chunks())
            return self._documents
