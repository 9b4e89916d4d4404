"""The engine's front door: corpora, indexing and retrieval over one store and one set of models.

`CueRag` owns the models, the store and one graph snapshot per corpus. A query takes the current
snapshot and works on it alone; an index run builds the next snapshot and swaps it in when done,
so every query sees one state of the graph. Index runs on one corpus are serialised: a second
writer is refused with a clear error instead of waiting.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from cuerag.answering import AnswerResult, generate_answer, llm_query_entities
from cuerag.baselines import KeywordIndex, as_result, rrf
from cuerag.catalog import DocumentInfo, DocumentPage, catalog, page
from cuerag.config import MAX_QUERY_CHARS, QIterParams, Settings
from cuerag.derived import SnapshotIndexes
from cuerag.diskspace import MB, FreeBytes, SpaceGuard, disk_free
from cuerag.document_text import DocumentText, read_document
from cuerag.documents import Document, check_documents, dedupe_documents
from cuerag.errors import (
    Cancelled,
    CorpusNotFoundError,
    CueRagError,
    InvalidNameError,
    NothingIndexed,
    ParameterError,
    ReadOnlyError,
    StorageFullError,
    StoreError,
)
from cuerag.folders import FileCheck, WalkRules, walk_paths
from cuerag.formats.reading import ByteBudget, limits_of
from cuerag.graph import (
    CHUNKS,
    KINDS,
    Graph,
    collection_name,
    corpus_of_collection,
    current_versions,
    load_graph,
    stored_counts,
    stored_sizes,
    updated_graph,
)
from cuerag.index import (
    REPORTED_IDS,
    Indexer,
    IndexReport,
    Progress,
    ShouldStop,
    chunk_vectors_mode,
    index_shape,
    stored_chunk_vectors_mode,
    stored_vectors_stamp,
    vectors_stamp,
)
from cuerag.llm import LLM, LLMUsage, make_llm, require_llm
from cuerag.models import Models, load_models
from cuerag.results import METHODS, Method, RetrievalResult
from cuerag.retrieval import Retriever
from cuerag.scoring import make_scorer
from cuerag.store import VectorStore, open_store
from cuerag.subset import DocFilter, matching, select
from cuerag.sync import no_files_error, plan_sync
from cuerag.text import TextTools

log = logging.getLogger(__name__)

_CORPUS_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


class DeleteReport(BaseModel):
    corpus: str
    documents_deleted: list[str]
    not_found: list[str]
    chunks_deleted: int
    units_removed: int
    entities_removed: int
    totals: dict[str, int]


class CorpusInfo(BaseModel):
    name: str
    documents: int
    chunks: int
    units: int
    entities: int


def validate_corpus_name(name: str) -> str:
    if not _CORPUS_NAME.fullmatch(name):
        raise InvalidNameError(
            f"invalid corpus name {name!r}: use 1-64 letters, digits, '-' or '_', starting with a letter or digit"
        )
    return name


def make_params(**overrides: object) -> QIterParams:
    """QIterParams from loose values, with range errors turned into ParameterError."""
    try:
        return QIterParams(**{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(_describe(e) for e in exc.errors())
        # The command line's flag for a parameter is its name with dashes (`--top-n`).
        flags = "; ".join(_describe(e, flag=True) for e in exc.errors())
        raise ParameterError(f"invalid retrieval parameters: {problems}", cli=f"invalid options: {flags}") from exc


def _describe(error: Any, *, flag: bool = False) -> str:
    """One validation error as 'name: what is wrong (got X; allowed A..B)', the name written as
    the command line's flag when `flag`."""
    name = ".".join(str(p) for p in error["loc"])
    shown = "--" + name.replace("_", "-") if flag else name
    text = f"{shown}: {error['msg']} (got {error.get('input')!r}"
    field = QIterParams.model_fields.get(name)
    if field is not None:
        bounds = {type(m).__name__: m for m in field.metadata}
        low, high = bounds.get("Ge"), bounds.get("Le")
        if low is not None and high is not None:
            text += f"; allowed {low.ge}..{high.le}"
    return text + ")"


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
        self.settings = settings or Settings()
        # Models load on first use: listing, counting, deleting and dropping need none, and
        # loading them costs seconds (the CLI's `corpora` answers in a fraction of that).
        self._models = models
        self._models_lock = threading.Lock()
        self.store = store or open_store(self.settings)
        self._owns_llm = llm is None
        # Read-only: the answer cache would be a write into the data directory.
        cache_dir = None if self.settings.read_only else self.settings.data_dir
        self.llm = llm or make_llm(self.settings, cache_dir=cache_dir)
        self.text = TextTools()
        self._free_bytes = free_bytes  # the data directory's free space (tests pass a full disk)
        self._graphs: dict[str, Graph] = {}
        self._graph_lock = threading.Lock()
        self._writers: dict[str, threading.Lock] = {}
        self._baselines: dict[str, _BaselineIndexes] = {}
        self._derived: dict[str, SnapshotIndexes] = {}
        self._warned_vectors: set[str] = set()

    @property
    def models(self) -> Models:
        """The embedder, reranker and NER model, loaded on first use."""
        if self._models is None:
            with self._models_lock:
                if self._models is None:
                    self._models = load_models(self.settings)
        return self._models

    @property
    def models_loaded(self) -> bool:
        return self._models is not None

    # -- corpora --

    def corpora(self) -> list[str]:
        return sorted(c for name in self.store.list_collections() if (c := corpus_of_collection(name)))

    def require_corpus(self, corpus: str) -> str:
        validate_corpus_name(corpus)
        if not self.store.has_collection(collection_name(corpus, "chunks")):
            raise CorpusNotFoundError(corpus, self.corpora())
        return corpus

    def graph(self, corpus: str) -> Graph:
        """The corpus's current snapshot, built from the store on first use."""
        self.require_corpus(corpus)
        with self._graph_lock:
            graph = self._graphs.get(corpus)
        if graph is None:
            # The stored vectors' size, not the embedder's: deleting or counting needs no model.
            # Whatever embeds a query or a document checks the two agree (`_check_dim`).
            dim = self.store.collection_dim(collection_name(corpus, "chunks"))
            graph = self._opened(corpus, load_graph(self.store, corpus, dim=dim))
            with self._graph_lock:
                graph = self._graphs.setdefault(corpus, graph)
        return graph

    def _opened(self, corpus: str, graph: Graph) -> Graph:
        """A freshly read snapshot, with the orphans a killed run left in the store deleted, so the
        store holds what the graph holds. Skipped when read-only, and when a writer holds the
        corpus (it may be writing those very points, and collects orphans when it ends)."""
        if self.settings.read_only or not (graph.orphan_unit_ids or graph.orphan_entity_ids or graph.orphan_chunk_ids):
            return graph
        with self._graph_lock:
            lock = self._writers.setdefault(corpus, threading.Lock())
        if not lock.acquire(blocking=False):
            return graph
        try:
            fresh, _, _ = self._collect_orphans(corpus, graph, earlier=graph)
            return fresh
        finally:
            lock.release()

    def sizes(self, corpus: str) -> dict[str, int]:
        """Node and edge counts: from the snapshot when one is loaded, else read from the store's
        payloads (no vectors, no model), with the same counting rules as the snapshot."""
        self.require_corpus(corpus)
        with self._graph_lock:
            graph = self._graphs.get(corpus)
        return graph.sizes if graph is not None else stored_sizes(self.store, corpus)

    def info(self, corpus: str) -> CorpusInfo:
        """A corpus's size for listings: from the snapshot when one is loaded, else the store's
        counts (no graph built, no model loaded)."""
        self.require_corpus(corpus)
        with self._graph_lock:
            graph = self._graphs.get(corpus)
        sizes = graph.sizes if graph is not None else stored_counts(self.store, corpus)
        return CorpusInfo(
            name=corpus,
            documents=sizes["documents"],
            chunks=sizes["chunks"],
            units=sizes["units"],
            entities=sizes["entities"],
        )

    def drop_corpus(self, corpus: str) -> None:
        self.require_corpus(corpus)
        with self._writer(corpus):
            self._drop(corpus)

    def _drop(self, corpus: str) -> None:
        for kind in KINDS:  # chunks first: the corpus stops being listed before the rest goes
            name = collection_name(corpus, kind)
            if self.store.has_collection(name):
                self.store.drop_collection(name)
        with self._graph_lock:
            self._graphs.pop(corpus, None)
            self._baselines.pop(corpus, None)
            self._derived.pop(corpus, None)

    def _check_dim(self, corpus: str, stored: int | None = None) -> None:
        """Refuse to embed against a corpus whose vectors have another size than the embedder's."""
        dim = self.store.collection_dim(collection_name(corpus, "chunks")) if stored is None else stored
        if dim != self.models.embedder.dim:
            raise StoreError(
                f"corpus {corpus!r} was indexed with {dim}-dimensional vectors but the embedder "
                f"{self.models.embedder.name!r} gives {self.models.embedder.dim}; use the embedder it was "
                "built with, or index it again into a new corpus"
            )

    def _check_vectors(self, corpus: str, graph: Graph, *, indexing: bool) -> None:
        """Vectors of one corpus come from one kind of embedder run (`vectors_stamp`): adding int8
        vectors to a float corpus, or the reverse, is refused. A query embedded by the other kind
        still finds the right neighbours (the two agree to within about 1e-2 in cosine), so it is
        answered, with a warning once per corpus."""
        current = vectors_stamp(self.models)
        stored = stored_vectors_stamp(graph, self.models)
        if stored == current:
            return
        fix = "set CUERAG_EMBEDDER_BACKEND / CUERAG_PRECISION as when it was built, or index it into a new corpus"
        if indexing:
            raise StoreError(f"corpus {corpus!r} holds vectors made by {stored}, this engine makes {current}; {fix}")
        with self._graph_lock:
            if corpus in self._warned_vectors:
                return
            self._warned_vectors.add(corpus)
        log.warning("corpus %r holds vectors made by %s, queries are embedded by %s; %s", corpus, stored, current, fix)

    def _check_chunk_vectors(self, corpus: str, graph: Graph) -> None:
        """Chunk vectors of one corpus are made one way (`chunk_vectors`): embedded and derived
        ones score alike only roughly, so indexing into a corpus made the other way is refused.
        Queries are embedded the same way under both, so querying is not affected."""
        stored = stored_chunk_vectors_mode(graph)
        current = chunk_vectors_mode(self.settings, self.models)
        if stored is not None and stored != current:
            raise StoreError(
                f"corpus {corpus!r} holds chunk vectors made {stored}, this engine makes them {current}; "
                f"set CUERAG_CHUNK_VECTORS={stored} as when it was built, or index it into a new corpus"
            )

    # -- indexing --

    def _writer(self, corpus: str) -> _WriterGuard:
        if self.settings.read_only:
            raise ReadOnlyError(f"this engine is read-only: corpus {corpus!r} cannot be changed")
        with self._graph_lock:
            lock = self._writers.setdefault(corpus, threading.Lock())
        return _WriterGuard(lock, corpus)

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
        validate_corpus_name(corpus)
        docs = check_documents(dedupe_documents(documents))
        if self.settings.alpha > 0:
            require_llm(self.llm, f"alpha={self.settings.alpha}")  # before anything is created
        with self._writer(corpus):
            report = self._index_locked(corpus, docs, progress, should_stop)
        log.info("indexed %s: %s", corpus, report.model_dump(exclude={"totals", "stage_seconds"}))
        return report

    def _index_locked(
        self, corpus: str, docs: Sequence[Document], progress: Progress | None, should_stop: ShouldStop | None
    ) -> IndexReport:
        """One index run; the caller holds the corpus's writer lock."""
        dim = self.models.embedder.dim
        created = not self.store.has_collection(collection_name(corpus, "chunks"))
        if created:
            self._refuse_case_twin(corpus)
        else:
            self._check_dim(corpus)
        space = self._space_guard()
        if created and space is not None:
            space.require_collections(len(KINDS), f"creating corpus {corpus!r}")
        # The chunks collection is what lists a corpus (`corpora`, `require_corpus`): created last,
        # so a run killed between two creations leaves no corpus a reader would open and find
        # incomplete (the rerun creates the rest); `_drop` removes it first for the same reason.
        for kind in sorted(KINDS, key=lambda k: k == CHUNKS):
            self.store.create_collection(collection_name(corpus, kind), dim)
        graph = self.graph(corpus)
        if not created:
            self._check_vectors(corpus, graph, indexing=True)
            self._check_chunk_vectors(corpus, graph)
        indexer = Indexer(
            settings=self.settings,
            models=self.models,
            text=self.text,
            store=self.store,
            llm=self.llm,
            space=space,
            should_stop=should_stop,
        )
        try:
            report, written = indexer.run(corpus, docs, graph, progress=progress)
        except BaseException:
            # A new corpus whose first run failed before any chunk landed is not left behind
            # as an empty corpus. Otherwise the snapshot is dropped: the next use rebuilds it
            # from the store, seeing what the failed run wrote (as orphans to collect).
            if created and self.store.count(collection_name(corpus, "chunks")) == 0:
                self._drop(corpus)
            else:
                with self._graph_lock:
                    self._graphs.pop(corpus, None)
                if isinstance(sys.exc_info()[1], Cancelled | StorageFullError):
                    # A stop the engine chose: clear what the run wrote now, not at next open.
                    self._discard_run(corpus)
            raise
        orphans = graph.orphan_unit_ids or graph.orphan_entity_ids or graph.orphan_chunk_ids
        if not (written.chunks or written.removed_chunks or orphans):
            report.totals = graph.sizes
            return report  # nothing changed: the snapshot stands
        updated = updated_graph(
            graph,
            chunks=written.chunks,
            units=written.units,
            entities=written.entities,
            removed_chunks=written.removed_chunks,
        )
        fresh, _, _ = self._collect_orphans(corpus, updated, earlier=graph)
        with self._graph_lock:
            self._graphs[corpus] = fresh
        report.totals = fresh.sizes
        return report

    def _refuse_case_twin(self, corpus: str) -> None:
        """A new corpus may not differ from an existing one only in case: on a case-insensitive
        filesystem (macOS, where desktop MCP hosts run; Windows) the two would be one folder, so a
        data directory made on Linux must not hold both."""
        twins = [c for c in self.corpora() if c != corpus and c.casefold() == corpus.casefold()]
        if twins:
            raise InvalidNameError(
                f"corpus name {corpus!r} differs from the existing corpus {twins[0]!r} only in case; on "
                f"case-insensitive filesystems (macOS, Windows) they would be the same, so use {twins[0]!r} "
                "itself or another name"
            )

    def _space_guard(self) -> SpaceGuard | None:
        """The free-space check for the embedded store (a Qdrant server minds its own disk)."""
        if self.settings.qdrant_url:
            return None
        return SpaceGuard(self.settings.data_dir, self.settings.min_free_mb * MB, self._free_bytes)

    def _discard_run(self, corpus: str) -> None:
        """After a run stopped under the writer lock: delete what it wrote (none of it is live)."""
        graph = load_graph(self.store, corpus, dim=self.models.embedder.dim)
        fresh, _, _ = self._collect_orphans(corpus, graph, earlier=graph)
        with self._graph_lock:
            self._graphs[corpus] = fresh

    def _collect_orphans(self, corpus: str, graph: Graph, *, earlier: Graph) -> tuple[Graph, int, int]:
        """Delete stored units and entities that no live chunk reaches: those the last change left
        unreachable, and those an earlier, killed run left behind (found when the store was read)
        unless this run made them live. Runs under the writer lock, after the run's chunks are
        stored, so it never removes what a run still needs. Returns the graph and how many units
        and entities were deleted."""
        units = sorted({*graph.orphan_unit_ids, *earlier.orphan_unit_ids} - graph.unit_pos.keys())
        entities = sorted({*graph.orphan_entity_ids, *earlier.orphan_entity_ids} - graph.entity_pos.keys())
        chunks = sorted({*graph.orphan_chunk_ids, *earlier.orphan_chunk_ids} - graph.chunk_pos.keys())
        # Losing versions' chunks first: until they go, their units are still reachable from the store.
        self.store.delete(collection_name(corpus, "chunks"), chunks)
        self.store.delete(collection_name(corpus, "units"), units)
        self.store.delete(collection_name(corpus, "entities"), entities)
        if units or entities:
            log.info("removed %d orphan units and %d orphan entities from %s", len(units), len(entities), corpus)
        fresh = dataclasses.replace(graph, orphan_unit_ids=[], orphan_entity_ids=[], orphan_chunk_ids=[])
        return fresh, len(units), len(entities)

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
    ) -> IndexReport:
        """Index files and folders (plus any inline `documents`) into a corpus. A file's identity
        is its path under its root, so an edited file replaces its earlier version; a file whose
        content hash is unchanged is skipped unread. `sync` also deletes the documents of files
        gone from the folders given. A bad file is a line in the report's `failed` while the rest
        is indexed; with `strict` it stops the run before anything is written. `known_failures`
        (path → reason) are failures already told of: logged again at debug level only. See
        cuerag.sync."""
        validate_corpus_name(corpus)
        started = time.perf_counter()
        walk = walk_paths(paths, rules=rules, check=check)
        if not walk.files and not walk.failed and not sync and not documents:
            raise no_files_error(paths)
        if self.settings.alpha > 0:
            require_llm(self.llm, f"alpha={self.settings.alpha}")
        with self._writer(corpus):
            exists = self.store.has_collection(collection_name(corpus, "chunks"))
            loading = time.perf_counter()
            graph = self.graph(corpus) if exists else None  # read from the store on a process's first use
            load_seconds = time.perf_counter() - loading
            plan = plan_sync(
                walk,
                graph,
                sync=sync,
                strict=strict,
                shape=index_shape(self.settings),
                check=check,
                limits=limits_of(self.settings),
                budget=ByteBudget(self.settings.max_request_bytes),
                known_failures=known_failures,
            )
            read_seconds = time.perf_counter() - started - load_seconds  # walk, hash, parse
            inline = check_documents(documents) if documents else []
            docs = dedupe_documents([*plan.documents, *inline])
            if not docs and not plan.remove and not plan.skipped:
                # Nothing could be read and nothing was there already: an error, not an empty report.
                if plan.failed:
                    raise NothingIndexed([(f.path, f.reason) for f in plan.failed])
                if not exists:
                    raise no_files_error(paths)
            if docs:
                report = self._index_locked(corpus, docs, progress, should_stop)
            else:
                report = IndexReport(corpus=corpus, totals=self.graph(corpus).sizes)
            if plan.remove:
                deleted = self._delete_locked(corpus, plan.remove)
                report.documents_removed = len(deleted.documents_deleted)
                report.removed_doc_ids = deleted.documents_deleted[:REPORTED_IDS]
                report.chunks_removed += deleted.chunks_deleted
                report.totals = deleted.totals
        report.added, report.changed, report.removed = plan.added, plan.changed, plan.removed
        report.skipped, report.failed = plan.skipped, plan.failed
        report.warnings, report.passed_over = plan.warnings, plan.passed_over
        report.documents_unchanged += plan.unchanged_documents
        report.chunks_kept += plan.unchanged_chunks
        report.stage_seconds = {"load": round(load_seconds, 3), "read": round(read_seconds, 3), **report.stage_seconds}
        report.elapsed_seconds = round(time.perf_counter() - started, 3)
        log.info(
            "indexed %s: %d files added, %d changed, %d removed, %d unchanged, %d failed",
            corpus,
            len(plan.added),
            len(plan.changed),
            len(plan.removed),
            len(plan.skipped),
            len(plan.failed),
        )
        return report

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
        with self._graph_lock:
            graph = self._graphs.get(corpus)
        if graph is not None:
            documents = self._snapshot_indexes(corpus, graph).documents().infos
        else:
            stored = self.store.scroll(collection_name(corpus, CHUNKS), with_vectors=False)
            documents = catalog(current_versions(stored)[0])
        selected: list[DocumentInfo] = matching(documents, filter)
        key = filter.key() if filter is not None else "{}"
        return page(corpus, selected, filter_json=key, cursor=cursor, limit=limit)

    def delete_documents(self, corpus: str, doc_ids: Sequence[str]) -> DeleteReport:
        """Delete documents: their chunks go, then the units and entities no other chunk reaches.
        The snapshot is updated from the removal; nothing is re-read or re-indexed."""
        self.require_corpus(corpus)
        if not doc_ids:
            raise ParameterError("no document ids given")
        with self._writer(corpus):
            return self._delete_locked(corpus, doc_ids)

    def _delete_locked(self, corpus: str, doc_ids: Sequence[str]) -> DeleteReport:
        graph = self.graph(corpus)
        by_doc = graph.doc_chunks()
        found = [d for d in dict.fromkeys(doc_ids) if d in by_doc]
        chunk_ids = [graph.chunk_ids[c] for d in found for c in by_doc[d]]
        self.store.delete(collection_name(corpus, "chunks"), chunk_ids)
        loaded = updated_graph(graph, removed_chunks=chunk_ids)
        fresh, units_removed, entities_removed = self._collect_orphans(corpus, loaded, earlier=graph)
        with self._graph_lock:
            self._graphs[corpus] = fresh
        return DeleteReport(
            corpus=corpus,
            documents_deleted=found,
            not_found=[d for d in doc_ids if d not in by_doc],
            chunks_deleted=len(chunk_ids),
            units_removed=units_removed,  # the deleted documents' own, and any a killed run left
            entities_removed=entities_removed,
            totals=fresh.sizes,
        )

    # -- retrieval --

    def retriever(self, corpus: str, filter: DocFilter | None = None) -> Retriever:
        """Retrieval over the corpus's current snapshot, limited to the documents `filter` selects
        (all of them when None). A filter that selects nothing, or names an unknown document id,
        is a ParameterError saying so."""
        graph = self.graph(corpus)
        derived = self._snapshot_indexes(corpus, graph)
        subset = select(graph, derived.documents(), filter) if filter is not None else None
        self._check_dim(corpus, stored=graph.unit_vectors.shape[1])
        self._check_vectors(corpus, graph, indexing=False)
        scorer = make_scorer(graph, self.models.reranker)
        return Retriever(
            corpus=corpus,
            graph=graph,
            store=self.store,
            models=self.models,
            scorer=scorer,
            derived=derived,
            subset=subset,
        )

    def _snapshot_indexes(self, corpus: str, graph: Graph) -> SnapshotIndexes:
        """The indexes Q-Iter derives from a snapshot, kept with it (each is built on first use)."""
        with self._graph_lock:
            cached = self._derived.get(corpus)
            if cached is None or cached.graph is not graph:
                cached = self._derived[corpus] = SnapshotIndexes(graph)
            return cached

    def query(
        self,
        corpus: str,
        question: str,
        *,
        params: QIterParams | None = None,
        method: Method = "qiter",
        llm_entities: bool = False,
        filter: DocFilter | None = None,
    ) -> RetrievalResult:
        """Retrieve the top-N chunks for a question with Q-Iter or one of the baselines.
        `llm_entities`: the LLM reads the question's entities for Q-Iter (NER if it finds none).
        `filter`: only the documents it selects are searched and walked (see cuerag.subset)."""
        result, _ = self._retrieve(corpus, question, params, method, llm_entities, filter)
        return result

    def _retrieve(
        self,
        corpus: str,
        question: str,
        params: QIterParams | None,
        method: Method,
        llm_entities: bool,
        filter: DocFilter | None = None,
    ) -> tuple[RetrievalResult, LLMUsage | None]:
        if not question.strip():
            raise ParameterError("the query is empty; pass a question")
        if len(question) > MAX_QUERY_CHARS:
            raise ParameterError(
                f"the query is {len(question)} characters long, over the {MAX_QUERY_CHARS} a question may have; "
                "shorten it to the question itself"
            )
        try:
            question.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: what Python makes of a non-UTF-8 argv byte
            raise ParameterError(
                f"the query holds {question[exc.start]!r} at position {exc.start}, which is not valid Unicode "
                "(a byte that is not UTF-8?); pass the question as UTF-8 text"
            ) from exc
        if method not in METHODS:
            raise ParameterError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
        params = params or QIterParams()
        retriever = self.retriever(corpus, filter)
        if retriever.note is not None:
            return RetrievalResult(
                corpus=corpus, query=question, method=method, chunks=[], elapsed_ms=0.0, note=retriever.note
            ), None
        if method == "qiter":
            if not llm_entities:
                return retriever.q_iter(question, params), None
            entities, usage = llm_query_entities(require_llm(self.llm, "llm_entities"), question)
            if not entities:
                log.info("the LLM found no entities in %r; falling back to NER", question)
            return retriever.q_iter(question, params, entities=entities or None), usage
        if method == "dense":
            return retriever.dense(question, params.top_n), None
        return self._baseline(corpus, retriever, question, method, params.top_n), None

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
        started = time.perf_counter()
        llm = require_llm(self.llm, "an answer")
        retrieval, entity_usage = self._retrieve(corpus, question, params, method, llm_entities, filter)
        if retrieval.note is not None:  # nothing to write an answer from: no call to the LLM
            raise ParameterError(retrieval.note)
        answer, usage = generate_answer(
            llm, question, retrieval.chunks, self.text, context_tokens=self.settings.llm_context_tokens
        )
        stages = {"answer": usage} if entity_usage is None else {"query_entities": entity_usage, "answer": usage}
        return AnswerResult(
            corpus=corpus,
            question=question,
            answer=answer,
            method=method,
            chunks=retrieval.chunks,
            trace=retrieval.trace,
            llm_usage=stages,
            elapsed_ms=round((time.perf_counter() - started) * 1000, 2),
        )

    def _baseline(self, corpus: str, retriever: Retriever, question: str, method: Method, n: int) -> RetrievalResult:
        started = time.perf_counter()
        graph = retriever.graph
        bm25 = retriever.derived.lexical()
        # With a filter the in-memory baselines rank the whole corpus and keep the subset's chunks.
        wide = n if retriever.subset is None else len(graph.chunk_ids)

        def inside(ranked: list[tuple[int, float]], k: int) -> list[tuple[int, float]]:
            return [(c, s) for c, s in ranked if retriever.chunk_allowed(c)][:k]

        if method == "bm25":
            ranked = inside(bm25.ranked_chunks(question, wide), n)
        elif method == "hybrid":
            pool = 4 * n
            dense = [c for c, _ in retriever.dense_ranking(question, pool)]
            lexical = [c for c, _ in inside(bm25.ranked_chunks(question, max(pool, wide)), pool)]
            ranked = rrf([dense, lexical], n)
        else:
            keywords = self._keyword_index(corpus, graph)
            ranked = inside(keywords.ranked(retriever.embed_query(question), wide), n)
        return as_result(graph, corpus, question, method, ranked, started)

    def _keyword_index(self, corpus: str, graph: Graph) -> KeywordIndex:
        """KET-RAG's keyword index of a snapshot, built on first use and kept with it."""
        with self._graph_lock:
            cached = self._baselines.get(corpus)
        if cached is not None and cached.graph is graph:
            return cached.keywords
        built = _BaselineIndexes(graph=graph, keywords=KeywordIndex.build(graph, self.models.embedder, self.text))
        with self._graph_lock:
            self._baselines[corpus] = built
        return built.keywords

    def close(self) -> None:
        self.store.close()
        if self._owns_llm and self.llm is not None and self.llm.cache is not None:
            self.llm.cache.close()


@dataclass(frozen=True)
class _BaselineIndexes:
    graph: Graph
    keywords: KeywordIndex


class _WriterGuard:
    """Holds a corpus's writer lock, refusing at once when another run holds it."""

    def __init__(self, lock: threading.Lock, corpus: str) -> None:
        self._lock = lock
        self._corpus = corpus

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            raise CueRagError(f"corpus {self._corpus!r} is being written by another index run; wait for it to finish")

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
