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
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from cuerag.answering import AnswerResult, generate_answer, llm_query_entities
from cuerag.baselines import BM25Retriever, KeywordIndex, as_result, rrf
from cuerag.config import QIterParams, Settings
from cuerag.document_text import DocumentText, read_document
from cuerag.documents import Document, check_documents, dedupe_documents, load_paths
from cuerag.errors import CorpusNotFoundError, CueRagError, InvalidNameError, ParameterError, StoreError
from cuerag.formats.reading import limits_of
from cuerag.graph import KINDS, Graph, collection_name, corpus_of_collection, load_graph, updated_graph
from cuerag.index import Indexer, IndexReport, Progress
from cuerag.llm import LLM, LLMUsage, make_llm, require_llm
from cuerag.models import Models, load_models
from cuerag.retrieval import METHODS, Method, RetrievalResult, Retriever
from cuerag.scoring import make_scorer
from cuerag.store import VectorStore, open_store
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
        raise ParameterError(f"invalid retrieval parameters: {problems}") from exc


def _describe(error: Any) -> str:
    """One validation error as 'name: what is wrong (got X; allowed A..B)'."""
    name = ".".join(str(p) for p in error["loc"])
    text = f"{name}: {error['msg']} (got {error.get('input')!r}"
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
    ) -> None:
        self.settings = settings or Settings()
        self.models = models or load_models(self.settings)
        self.store = store or open_store(self.settings)
        self._owns_llm = llm is None
        self.llm = llm or make_llm(self.settings, cache_dir=self.settings.data_dir)
        self.text = TextTools()
        self._graphs: dict[str, Graph] = {}
        self._graph_lock = threading.Lock()
        self._writers: dict[str, threading.Lock] = {}
        self._baselines: dict[str, _BaselineIndexes] = {}

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
            self._check_dim(corpus)
            graph = load_graph(self.store, corpus, dim=self.models.embedder.dim)
            with self._graph_lock:
                graph = self._graphs.setdefault(corpus, graph)
        return graph

    def info(self, corpus: str) -> CorpusInfo:
        sizes = self.graph(corpus).sizes
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
        for kind in KINDS:
            name = collection_name(corpus, kind)
            if self.store.has_collection(name):
                self.store.drop_collection(name)
        with self._graph_lock:
            self._graphs.pop(corpus, None)
            self._baselines.pop(corpus, None)

    def _check_dim(self, corpus: str) -> None:
        dim = self.store.collection_dim(collection_name(corpus, "chunks"))
        if dim != self.models.embedder.dim:
            raise StoreError(
                f"corpus {corpus!r} was indexed with {dim}-dimensional vectors but the embedder "
                f"{self.models.embedder.name!r} gives {self.models.embedder.dim}; use the embedder it was "
                "built with, or index it again into a new corpus"
            )

    # -- indexing --

    def _writer(self, corpus: str) -> _WriterGuard:
        with self._graph_lock:
            lock = self._writers.setdefault(corpus, threading.Lock())
        return _WriterGuard(lock, corpus)

    def index_documents(
        self, corpus: str, documents: Sequence[Document], *, progress: Progress | None = None
    ) -> IndexReport:
        """Add documents to a corpus (created if new). Unchanged documents cost nothing."""
        validate_corpus_name(corpus)
        docs = check_documents(dedupe_documents(documents))
        if self.settings.alpha > 0:
            require_llm(self.llm, f"alpha={self.settings.alpha}")  # before anything is created
        with self._writer(corpus):
            dim = self.models.embedder.dim
            created = not self.store.has_collection(collection_name(corpus, "chunks"))
            for kind in KINDS:
                self.store.create_collection(collection_name(corpus, kind), dim)
            graph = self.graph(corpus)
            indexer = Indexer(
                settings=self.settings, models=self.models, text=self.text, store=self.store, llm=self.llm
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
                raise
            if not (written.chunks or written.removed_chunks or graph.orphan_unit_ids or graph.orphan_entity_ids):
                report.totals = graph.sizes
                return report  # nothing changed: the snapshot stands
            updated = updated_graph(
                graph,
                chunks=written.chunks,
                units=written.units,
                entities=written.entities,
                removed_chunks=written.removed_chunks,
            )
            fresh = self._collect_orphans(corpus, updated, earlier=graph)
            with self._graph_lock:
                self._graphs[corpus] = fresh
            report.totals = fresh.sizes
        log.info("indexed %s: %s", corpus, report.model_dump(exclude={"totals", "stage_seconds"}))
        return report

    def _collect_orphans(self, corpus: str, graph: Graph, *, earlier: Graph) -> Graph:
        """Delete stored units and entities that no live chunk reaches: those the last change left
        unreachable, and those an earlier, killed run left behind (found when the store was read)
        unless this run made them live. Runs under the writer lock, after the run's chunks are
        stored, so it never removes what a run still needs."""
        units = sorted({*graph.orphan_unit_ids, *earlier.orphan_unit_ids} - graph.unit_pos.keys())
        entities = sorted({*graph.orphan_entity_ids, *earlier.orphan_entity_ids} - graph.entity_pos.keys())
        self.store.delete(collection_name(corpus, "units"), units)
        self.store.delete(collection_name(corpus, "entities"), entities)
        if units or entities:
            log.info("removed %d orphan units and %d orphan entities from %s", len(units), len(entities), corpus)
        return dataclasses.replace(graph, orphan_unit_ids=[], orphan_entity_ids=[])

    def index_paths(self, corpus: str, paths: Sequence[str | Path], *, progress: Progress | None = None) -> IndexReport:
        """Read and validate every file first, then index; a bad file stops the run before any write."""
        validate_corpus_name(corpus)
        docs = load_paths(paths, limits=limits_of(self.settings), max_request_bytes=self.settings.max_request_bytes)
        return self.index_documents(corpus, docs, progress=progress)

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

    def delete_documents(self, corpus: str, doc_ids: Sequence[str]) -> DeleteReport:
        """Delete documents: their chunks go, then the units and entities no other chunk reaches.
        The snapshot is updated from the removal; nothing is re-read or re-indexed."""
        self.require_corpus(corpus)
        if not doc_ids:
            raise ParameterError("no document ids given")
        with self._writer(corpus):
            graph = self.graph(corpus)
            by_doc = graph.doc_chunks()
            found = [d for d in dict.fromkeys(doc_ids) if d in by_doc]
            chunk_ids = [graph.chunk_ids[c] for d in found for c in by_doc[d]]
            self.store.delete(collection_name(corpus, "chunks"), chunk_ids)
            loaded = updated_graph(graph, removed_chunks=chunk_ids)
            fresh = self._collect_orphans(corpus, loaded, earlier=graph)
            with self._graph_lock:
                self._graphs[corpus] = fresh
        return DeleteReport(
            corpus=corpus,
            documents_deleted=found,
            not_found=[d for d in doc_ids if d not in by_doc],
            chunks_deleted=len(chunk_ids),
            units_removed=len(loaded.orphan_unit_ids),
            entities_removed=len(loaded.orphan_entity_ids),
            totals=fresh.sizes,
        )

    # -- retrieval --

    def retriever(self, corpus: str) -> Retriever:
        graph = self.graph(corpus)
        scorer = make_scorer(graph, self.models.reranker)
        return Retriever(corpus=corpus, graph=graph, store=self.store, models=self.models, scorer=scorer)

    def query(
        self,
        corpus: str,
        question: str,
        *,
        params: QIterParams | None = None,
        method: Method = "qiter",
        llm_entities: bool = False,
    ) -> RetrievalResult:
        """Retrieve the top-N chunks for a question with Q-Iter or one of the baselines.
        `llm_entities`: the LLM reads the question's entities for Q-Iter (NER if it finds none)."""
        result, _ = self._retrieve(corpus, question, params, method, llm_entities)
        return result

    def _retrieve(
        self, corpus: str, question: str, params: QIterParams | None, method: Method, llm_entities: bool
    ) -> tuple[RetrievalResult, LLMUsage | None]:
        if not question.strip():
            raise ParameterError("the query is empty; pass a question")
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
        retriever = self.retriever(corpus)
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
    ) -> AnswerResult:
        """Retrieve, then have the LLM answer from the top chunks (the paper's answer prompt)."""
        started = time.perf_counter()
        llm = require_llm(self.llm, "an answer")
        retrieval, entity_usage = self._retrieve(corpus, question, params, method, llm_entities)
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
        indexes = self._baseline_indexes(corpus, graph)
        if method == "bm25":
            ranked = indexes.bm25.ranked(question, n)
        elif method == "hybrid":
            pool = 4 * n
            dense = [graph.chunk_pos[h.chunk_id] for h in retriever.dense(question, pool).chunks]
            lexical = [c for c, _ in indexes.bm25.ranked(question, pool)]
            ranked = rrf([dense, lexical], n)
        else:
            ranked = indexes.keywords.ranked(retriever.embed_query(question), n)
        return as_result(graph, corpus, question, method, ranked, started)

    def _baseline_indexes(self, corpus: str, graph: Graph) -> _BaselineIndexes:
        """BM25 and keyword indexes of a snapshot, built on first use and kept with it."""
        with self._graph_lock:
            cached = self._baselines.get(corpus)
        if cached is not None and cached.graph is graph:
            return cached
        built = _BaselineIndexes(
            graph=graph,
            bm25=BM25Retriever(graph),
            keywords=KeywordIndex.build(graph, self.models.embedder, self.text),
        )
        with self._graph_lock:
            self._baselines[corpus] = built
        return built

    def close(self) -> None:
        self.store.close()
        if self._owns_llm and self.llm is not None and self.llm.cache is not None:
            self.llm.cache.close()


@dataclass(frozen=True)
class _BaselineIndexes:
    graph: Graph
    bm25: BM25Retriever
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
