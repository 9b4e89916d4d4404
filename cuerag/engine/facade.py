"""The engine's front door: corpora, indexing and retrieval over one store and one set of models.

`CueRag` owns the models (loaded on first use), the store and one graph snapshot per corpus, and
delegates: index runs to `cuerag.engine.indexing`, queries to `cuerag.engine.querying`, snapshots
and writer locks to `cuerag.engine.snapshots`. A query takes the current snapshot and works on it
alone; an index run builds the next snapshot and swaps it in when done, so every query sees one
state of the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from cuerag.communities import CommunityIndex
from cuerag.communities.browse import ThemeListing
from cuerag.communities.theme_search import GlobalSearchResult
from cuerag.config import QIterParams, Settings
from cuerag.engine.indexing import IndexRuns
from cuerag.engine.parts import EngineParts
from cuerag.engine.querying import Queries
from cuerag.engine.reports import CorpusInfo, DeleteReport
from cuerag.engine.snapshots import Snapshots
from cuerag.graph.catalog import DocumentPage, catalog, page
from cuerag.graph.document_text import DocumentText, read_document
from cuerag.graph.schema import CHUNKS, collection_name
from cuerag.graph.snapshot import Graph, current_versions, stored_counts, stored_sizes
from cuerag.index.report import IndexReport, Progress, ShouldStop
from cuerag.ingest.documents import Document
from cuerag.ingest.folders import FileCheck, WalkRules
from cuerag.llm.client import LLM, make_llm
from cuerag.models.loading import Models, load_models
from cuerag.retrieval.answering import AnswerResult
from cuerag.retrieval.explain import ExplainedResult
from cuerag.retrieval.filters import DocFilter, matching
from cuerag.retrieval.results import Method
from cuerag.retrieval.retriever import Retriever
from cuerag.store import VectorStore, open_store
from cuerag.store.diskspace import FreeBytes, disk_free
from cuerag.text.tools import TextTools


class CueRag:
    """One engine: models loaded once, a store, and a graph snapshot per corpus."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        models: Models | None = None,
        store: VectorStore | None = None,
        llm: LLM | None = None,
        free_bytes: FreeBytes = disk_free,
    ) -> None:
        settings = settings or Settings()
        self._owns_llm = llm is None
        # Read-only: the answer cache would be a write into the data directory.
        cache_dir = None if settings.read_only else settings.data_dir
        self.snapshots = Snapshots(store or open_store(settings), read_only=lambda: self.settings.read_only)
        self._parts = EngineParts(
            settings=settings,
            snapshots=self.snapshots,
            llm=llm or make_llm(settings, cache_dir=cache_dir),
            free_bytes=free_bytes,
            load=load_models,
            loaded=models,
        )
        self._runs = IndexRuns(self._parts)
        self._closers: list[Callable[[], None]] = []
        self._queries = Queries(self._parts)

    @property
    def settings(self) -> Settings:
        return self._parts.settings

    @settings.setter
    def settings(self, settings: Settings) -> None:  # tests change a setting between runs
        self._parts.settings = settings

    @property
    def llm(self) -> LLM | None:
        return self._parts.llm

    @llm.setter
    def llm(self, llm: LLM | None) -> None:
        self._parts.llm = llm

    @property
    def has_llm(self) -> bool:
        return self._parts.llm is not None

    @property
    def store(self) -> VectorStore:
        return self.snapshots.store

    @store.setter
    def store(self, store: VectorStore) -> None:  # tests put a failing store in its place
        self.snapshots.store = store

    @property
    def models(self) -> Models:
        """The embedder, reranker and NER model, loaded on first use."""
        return self._parts.models

    @property
    def models_loaded(self) -> bool:
        return self._parts.loaded is not None

    @property
    def text(self) -> TextTools:
        return self._parts.text

    # -- corpora --

    def corpora(self) -> list[str]:
        return self.snapshots.corpora()

    def require_corpus(self, corpus: str) -> str:
        return self.snapshots.require_corpus(corpus)

    def graph(self, corpus: str) -> Graph:
        """The corpus's current snapshot, built from the store on first use."""
        return self.snapshots.graph(corpus)

    def sizes(self, corpus: str) -> dict[str, int]:
        """Node and edge counts: from the snapshot when one is loaded, else read from the store's
        payloads (no vectors, no model), with the same counting rules as the snapshot."""
        self.require_corpus(corpus)
        graph = self.snapshots.loaded(corpus)
        return graph.sizes if graph is not None else stored_sizes(self.store, corpus)

    def info(self, corpus: str) -> CorpusInfo:
        """A corpus's size for listings: from the snapshot when one is loaded, else the store's
        counts (no graph built, no model loaded)."""
        self.require_corpus(corpus)
        graph = self.snapshots.loaded(corpus)
        sizes = graph.sizes if graph is not None else stored_counts(self.store, corpus)
        return CorpusInfo(
            name=corpus,
            documents=sizes["documents"],
            chunks=sizes["chunks"],
            units=sizes["units"],
            entities=sizes["entities"],
        )

    def drop_corpus(self, corpus: str) -> None:
        self._runs.drop_corpus(corpus)

    # -- indexing --

    def index_documents(
        self,
        corpus: str,
        documents: Sequence[Document],
        *,
        progress: Progress | None = None,
        should_stop: ShouldStop | None = None,
    ) -> IndexReport:
        """Add documents to a corpus (created if new). Unchanged documents cost nothing.
        `should_stop` is asked between stages and batches; when it says True the run stops with
        `Cancelled`, having made nothing of itself visible."""
        return self._runs.index_documents(corpus, documents, progress=progress, should_stop=should_stop)

    def index_paths(
        self,
        corpus: str,
        paths: Sequence[str | Path],
        *,
        documents: Sequence[Document] = (),
        sync: bool = False,
        strict: bool = False,
        rules: WalkRules | None = None,
        check: FileCheck | None = None,
        progress: Progress | None = None,
        should_stop: ShouldStop | None = None,
        known_failures: Mapping[str, str] | None = None,
        full_report: bool = False,
    ) -> IndexReport:
        """Index files and folders (plus any inline `documents`) into a corpus. A file's identity
        is its path under its root, so an edited file replaces its earlier version; a file whose
        content hash is unchanged is skipped unread. `sync` also deletes the documents of files
        gone from the folders given. A bad file is a line in the report's `failed` while the rest
        is indexed; with `strict` it stops the run before anything is written. `known_failures`
        (path → reason) are failures already told of: logged again at debug level only. The
        report lists the first 100 files of each kind, with every count (`full_report`: all of
        them; cuerag.index.report_bounds). See cuerag.index.sync."""
        return self._runs.index_paths(
            corpus,
            paths,
            documents=documents,
            sync=sync,
            strict=strict,
            rules=rules,
            check=check,
            progress=progress,
            should_stop=should_stop,
            known_failures=known_failures,
            full_report=full_report,
        )

    def delete_documents(self, corpus: str, doc_ids: Sequence[str]) -> DeleteReport:
        """Delete documents: their chunks go, then the units and entities no other chunk reaches."""
        return self._runs.delete_documents(corpus, doc_ids)

    # -- reading --

    def read_document(
        self,
        corpus: str,
        doc_id: str | None = None,
        *,
        chunk_id: str | None = None,
        start: int = 0,
        max_chars: int = 20_000,
        context: int = 1_000,
    ) -> DocumentText:
        """A document's extracted text (from `start`, at most `max_chars`), or the window of
        `context` characters around one of its chunks: for quoting more than a hit."""
        return read_document(
            self.graph(corpus), doc_id=doc_id, chunk_id=chunk_id, start=start, max_chars=max_chars, context=context
        )

    def list_documents(
        self, corpus: str, *, filter: DocFilter | None = None, cursor: str | None = None, limit: int = 50
    ) -> DocumentPage:
        """A page of the corpus's documents (by id) that the filter selects, after `cursor` (the
        `next_cursor` of the page before). Read from the snapshot when one is loaded, else from
        the chunks' payloads: no graph is built and no model loaded."""
        self.require_corpus(corpus)
        graph = self.snapshots.loaded(corpus)
        if graph is not None:
            documents = self.snapshots.indexes(corpus, graph).documents().infos
        else:
            stored = self.store.scroll(collection_name(corpus, CHUNKS), with_vectors=False)
            documents = catalog(current_versions(stored)[0])
        selected = matching(documents, filter)
        key = filter.key() if filter is not None else "{}"
        return page(corpus, selected, filter_json=key, cursor=cursor, limit=limit)

    # -- retrieval --

    def retriever(self, corpus: str, filter: DocFilter | None = None) -> Retriever:
        """Retrieval over the corpus's current snapshot, limited to the documents `filter` selects."""
        return self._queries.retriever(corpus, filter)

    def query(
        self,
        corpus: str,
        question: str,
        *,
        params: QIterParams | None = None,
        method: Method = "qiter",
        llm_entities: bool = False,
        filter: DocFilter | None = None,
    ) -> ExplainedResult:
        """Retrieve the top-N chunks for a question with Q-Iter or one of the baselines, each with
        why it is there (read against the snapshot the query ran on).
        `llm_entities`: the LLM reads the question's entities for Q-Iter (NER if it finds none).
        `filter`: only the documents it selects are searched and walked (see cuerag.retrieval.filters)."""
        return self._queries.retrieve(corpus, question, params, method, llm_entities, filter)[0]

    def communities(self, corpus: str) -> CommunityIndex:
        """The corpus's theme hierarchy and the seed methods' hierarchies (`cuerag.communities`)."""
        return self._queries.communities(corpus)

    def global_search(self, corpus: str, question: str, *, budget_tokens: int = 2000) -> GlobalSearchResult:
        """A broad question answered by theme: cited statements grouped by community, within
        `budget_tokens`, with the share of the corpus's documents they cover; an empty question,
        or one about the corpus itself, gets its top themes (`cuerag.communities.theme_search`)."""
        return self._queries.global_search(corpus, question, budget_tokens)

    def themes(
        self, corpus: str, *, theme_id: str | None = None, level: int = 0, offset: int = 0, limit: int = 20
    ) -> ThemeListing:
        """The corpus's themes at `level` (0 the broadest), or `theme_id` opened with its children,
        a page of `limit` from `offset` (`cuerag.communities.browse`)."""
        return self._queries.themes(corpus, theme_id=theme_id, level=level, offset=offset, limit=limit)

    def answer(
        self,
        corpus: str,
        question: str,
        *,
        params: QIterParams | None = None,
        method: Method = "qiter",
        llm_entities: bool = False,
        filter: DocFilter | None = None,
    ) -> AnswerResult:
        """Retrieve, then have the LLM answer from the top chunks (the paper's answer prompt)."""
        return self._queries.answer(
            corpus, question, params=params, method=method, llm_entities=llm_entities, filter=filter
        )

    def on_close(self, closer: Callable[[], None]) -> None:
        """Run `closer` first when the engine closes (sharing stops serving before the store's
        lock is released: cuerag.engine.sharing)."""
        self._closers.append(closer)

    def close(self) -> None:
        while self._closers:
            self._closers.pop()()
        self.store.close()
        if self._owns_llm and self.llm is not None and self.llm.cache is not None:
            self.llm.cache.close()
