"""Indexes derived from one graph snapshot (BM25 over its texts, how alike its chunks are, how
specific each title is, the link edges the walk may take, the documents each entity links, how the
corpus writes its words, its documents, KET-RAG's keyword index), each built on first use and kept
with the snapshot: a new snapshot gets new ones. The one cache of what a snapshot derives."""

from __future__ import annotations

import threading

from cuerag.graph.catalog import DocumentTable, catalog
from cuerag.graph.snapshot import Graph
from cuerag.graph.title_mentions import TitleSpecificity
from cuerag.models.base import Embedder
from cuerag.retrieval.baselines import KeywordIndex
from cuerag.retrieval.entity_links import EntityDocuments
from cuerag.retrieval.lexical import LexicalIndex, corpus_homogeneity
from cuerag.retrieval.link_edges import LinkEdges
from cuerag.text.casing import CorpusCasing
from cuerag.text.tools import TextTools


class SnapshotIndexes:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._lock = threading.Lock()
        self._lexical: LexicalIndex | None = None
        self._homogeneity: float | None = None
        self._specificity: TitleSpecificity | None = None
        self._link_edges: LinkEdges | None = None
        self._entity_documents: EntityDocuments | None = None
        self._casing: CorpusCasing | None = None
        self._documents: DocumentTable | None = None
        self._keywords: KeywordIndex | None = None
        # Its own lock: building it embeds every sub-chunk, and must not hold up the other indexes.
        self._keywords_lock = threading.Lock()

    def lexical(self) -> LexicalIndex:
        with self._lock:
            if self._lexical is None:
                self._lexical = LexicalIndex(self.graph)
            return self._lexical

    def homogeneity(self) -> float:
        """The mean cosine between two of the snapshot's chunks (`corpus_homogeneity`)."""
        with self._lock:
            if self._homogeneity is None:
                self._homogeneity = corpus_homogeneity(self.graph.chunk_vectors)
            return self._homogeneity

    def title_specificity(self) -> TitleSpecificity:
        with self._lock:
            if self._specificity is None:
                g = self.graph
                self._specificity = TitleSpecificity(g.title_index, g.chunk_texts, g.chunk_docs)
            return self._specificity

    def link_edges(self) -> LinkEdges:
        with self._lock:
            if self._link_edges is None:
                self._link_edges = LinkEdges(self.graph, self.title_specificity)
            return self._link_edges

    def entity_documents(self) -> EntityDocuments:
        with self._lock:
            if self._entity_documents is None:
                self._entity_documents = EntityDocuments(self.graph)
            return self._entity_documents

    def casing(self) -> CorpusCasing:
        with self._lock:
            if self._casing is None:
                g = self.graph
                self._casing = CorpusCasing(g.chunk_texts, [*g.entity_names, *g.chunk_titles])
            return self._casing

    def documents(self) -> DocumentTable:
        """The snapshot's documents, for listings and for resolving filters."""
        with self._lock:
            if self._documents is None:
                chunks = self.graph.points.chunks.values() if self.graph.points is not None else ()
                self._documents = DocumentTable(infos=catalog(chunks), positions=self.graph.doc_chunks())
            return self._documents

    def keywords(self, embedder: Embedder, text: TextTools) -> KeywordIndex:
        """KET-RAG's keyword index (the `ketrag` baseline): embeds sub-chunks, so built only when asked."""
        with self._keywords_lock:
            if self._keywords is None:
                self._keywords = KeywordIndex.build(self.graph, embedder, text)
            return self._keywords
