"""The community indexes of one graph snapshot, each built on first use and kept with it.

The document hierarchy behind global search and its reports are read from the store when the
corpus has them (`stored`: written by every index run, `cuerag.communities.live`), and built in
memory from the snapshot otherwise (a corpus indexed with `themes` off, or before they existed);
the entity-level hierarchies of the two seed methods are built in memory. A new snapshot (after
any write) gets new ones; `build_seconds` records what each part cost.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from cuerag.communities.archrag import ArchLevel, build_archrag
from cuerag.communities.docgraph import DocGraphParams, document_edges, tfidf_vectors
from cuerag.communities.documents import DocTable
from cuerag.communities.entity_graph import EntityLayer, EntityVectors, entity_layer
from cuerag.communities.hierarchy import Hierarchy, hierarchical_leiden
from cuerag.communities.leanrag import LeanTree, build_leanrag
from cuerag.communities.reports import Report, ReportWriter
from cuerag.communities.stored import ThemeSet, served_reports, stored_hierarchy
from cuerag.graph.snapshot import Graph

T = TypeVar("T")
MAX_CLUSTER_SIZE = 15


class CommunityIndex:
    def __init__(
        self,
        graph: Graph,
        entity_vectors: EntityVectors,
        params: DocGraphParams | None = None,
        *,
        stored: ThemeSet | None = None,
    ) -> None:
        self.graph = graph
        self.stored = stored
        self._entity_vectors = entity_vectors
        self.params = params or DocGraphParams()
        self._lock = threading.RLock()
        self._parts: dict[str, Any] = {}
        self.build_seconds: dict[str, float] = {}

    def _part(self, name: str, make: Callable[[], T]) -> T:
        with self._lock:
            if name not in self._parts:
                started = time.perf_counter()
                self._parts[name] = make()
                self.build_seconds[name] = round(time.perf_counter() - started, 3)
            return self._parts[name]

    @property
    def docs(self) -> DocTable:
        return self._part("docs", lambda: DocTable.build(self.graph))

    def _lexical(self) -> tuple[Any, list[str]]:
        return self._part("tfidf", lambda: tfidf_vectors(self.docs.doc_texts(self.graph)))

    @property
    def hierarchy(self) -> Hierarchy:
        def make() -> Hierarchy:
            if self.stored is not None:
                return stored_hierarchy(self.stored, self.docs)
            edges = document_edges(self.graph, self.docs, self._lexical()[0], self.params)
            return hierarchical_leiden(len(self.docs), edges, max_cluster_size=MAX_CLUSTER_SIZE)

        return self._part("hierarchy", make)

    @property
    def reports(self) -> dict[str, Report]:
        def make() -> dict[str, Report]:
            if self.stored is not None:
                return served_reports(self.stored, self.hierarchy, self.docs)
            tfidf, vocabulary = self._lexical()
            return ReportWriter(self.graph, self.docs, tfidf, vocabulary).all(self.hierarchy)

        return self._part("reports", make)

    @property
    def entity_layer(self) -> EntityLayer:
        return self._part("entity_layer", lambda: entity_layer(self.graph, self._entity_vectors))

    @property
    def archrag(self) -> list[ArchLevel]:
        return self._part("archrag", lambda: build_archrag(self.entity_layer, self.graph.chunk_vectors))

    @property
    def leanrag(self) -> LeanTree:
        return self._part("leanrag", lambda: build_leanrag(self.entity_layer))
