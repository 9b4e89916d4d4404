"""Each corpus's current graph snapshot, the indexes derived from it, and its writer lock.

A query takes the current snapshot and works on it alone; an index run builds the next snapshot
and swaps it in when done, so every query sees one state of the graph. Runs that write one corpus
are serialised: a second writer is refused with a clear error instead of waiting.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from cuerag.communities.entity_graph import EntityVectors
from cuerag.communities.index import CommunityIndex
from cuerag.communities.stored import load_themes
from cuerag.errors import CorpusNotFoundError, CueRagError, ReadOnlyError
from cuerag.graph.schema import CHUNKS, ENTITIES, UNITS, collection_name, corpus_of_collection, validate_corpus_name
from cuerag.graph.snapshot import Graph, load_graph
from cuerag.retrieval.snapshot_indexes import SnapshotIndexes
from cuerag.store.base import VectorStore

log = logging.getLogger(__name__)


class Snapshots:
    """The snapshots of one store's corpora, loaded on first use."""

    def __init__(self, store: VectorStore, *, read_only: Callable[[], bool]) -> None:
        self.store = store  # the engine's one reference to its store
        self._read_only = read_only  # read live: the engine's settings can be replaced
        self._lock = threading.Lock()
        self._graphs: dict[str, Graph] = {}
        self._indexes: dict[str, SnapshotIndexes] = {}
        self._communities: dict[str, CommunityIndex] = {}
        self._writers: dict[str, threading.Lock] = {}

    # -- corpora --

    def corpora(self) -> list[str]:
        return sorted(c for name in self.store.list_collections() if (c := corpus_of_collection(name)))

    def require_corpus(self, corpus: str) -> str:
        validate_corpus_name(corpus)
        if not self.store.has_collection(collection_name(corpus, CHUNKS)):
            raise CorpusNotFoundError(corpus, self.corpora())
        return corpus

    # -- snapshots --

    def loaded(self, corpus: str) -> Graph | None:
        """The snapshot in memory, if one was loaded (listings use it instead of reading the store)."""
        with self._lock:
            return self._graphs.get(corpus)

    def graph(self, corpus: str) -> Graph:
        """The corpus's current snapshot, built from the store on first use."""
        self.require_corpus(corpus)
        graph = self.loaded(corpus)
        if graph is None:
            # The stored vectors' size, not the embedder's: deleting or counting needs no model.
            dim = self.store.collection_dim(collection_name(corpus, CHUNKS))
            graph = self._opened(corpus, load_graph(self.store, corpus, dim=dim))
            with self._lock:
                graph = self._graphs.setdefault(corpus, graph)
        return graph

    def put(self, corpus: str, graph: Graph) -> None:
        with self._lock:
            self._graphs[corpus] = graph

    def forget(self, corpus: str) -> None:
        """Drop the snapshot (and what it derived): the next use reads the store again."""
        with self._lock:
            self._graphs.pop(corpus, None)
            self._indexes.pop(corpus, None)
            self._communities.pop(corpus, None)

    def indexes(self, corpus: str, graph: Graph) -> SnapshotIndexes:
        """The indexes derived from this snapshot, kept with it (each is built on first use)."""
        with self._lock:
            cached = self._indexes.get(corpus)
            if cached is None or cached.graph is not graph:
                cached = self._indexes[corpus] = SnapshotIndexes(graph)
            return cached

    def communities(self, corpus: str, graph: Graph, entity_vectors: EntityVectors) -> CommunityIndex:
        """The community hierarchies of this snapshot, kept with it (each part built on first use)."""
        with self._lock:
            cached = self._communities.get(corpus)
            if cached is None or cached.graph is not graph:
                stored = load_themes(self.store, corpus)  # None: built in memory on first use
                cached = self._communities[corpus] = CommunityIndex(graph, entity_vectors, stored=stored)
            return cached

    def _opened(self, corpus: str, graph: Graph) -> Graph:
        """A freshly read snapshot, with the orphans a killed run left in the store deleted, so the
        store holds what the graph holds. Skipped when read-only, and when a writer holds the
        corpus (it may be writing those very points, and collects orphans when it ends)."""
        if self._read_only() or not (graph.orphan_unit_ids or graph.orphan_entity_ids or graph.orphan_chunk_ids):
            return graph
        lock = self._writer_lock(corpus)
        if not lock.acquire(blocking=False):
            return graph
        try:
            fresh, _, _ = collect_orphans(self.store, corpus, graph, earlier=graph)
            return fresh
        finally:
            lock.release()

    # -- writers --

    def _writer_lock(self, corpus: str) -> threading.Lock:
        with self._lock:
            return self._writers.setdefault(corpus, threading.Lock())

    @contextmanager
    def writer(self, corpus: str) -> Iterator[None]:
        """Hold the corpus's writer lock, refusing at once when another run holds it."""
        if self._read_only():
            raise ReadOnlyError(f"this engine is read-only: corpus {corpus!r} cannot be changed")
        lock = self._writer_lock(corpus)
        if not lock.acquire(blocking=False):
            raise CueRagError(f"corpus {corpus!r} is being written by another index run; wait for it to finish")
        try:
            yield
        finally:
            lock.release()


def collect_orphans(store: VectorStore, corpus: str, graph: Graph, *, earlier: Graph) -> tuple[Graph, int, int]:
    """Delete stored units and entities that no live chunk reaches: those the last change left
    unreachable, and those an earlier, killed run left behind (found when the store was read)
    unless this run made them live. Runs under the writer lock, after the run's chunks are
    stored, so it never removes what a run still needs. Returns the graph and how many units
    and entities were deleted."""
    units = sorted(u for u in {*graph.orphan_unit_ids, *earlier.orphan_unit_ids} if not graph.holds_unit(u))
    entities = sorted(e for e in {*graph.orphan_entity_ids, *earlier.orphan_entity_ids} if not graph.holds_entity(e))
    chunks = sorted({*graph.orphan_chunk_ids, *earlier.orphan_chunk_ids} - graph.chunk_pos.keys())
    # Losing versions' chunks first: until they go, their units are still reachable from the store.
    store.delete(collection_name(corpus, CHUNKS), chunks)
    store.delete(collection_name(corpus, UNITS), units)
    store.delete(collection_name(corpus, ENTITIES), entities)
    if units or entities:
        log.info("removed %d orphan units and %d orphan entities from %s", len(units), len(entities), corpus)
    fresh = dataclasses.replace(graph, orphan_unit_ids=[], orphan_entity_ids=[], orphan_chunk_ids=[])
    return fresh, len(units), len(entities)
