"""Queries over a corpus's current snapshot: a retriever limited to a filter's documents, a
retrieval by any method (`cuerag.retrieval.methods`), and an answer written by the LLM from it.
Each result comes explained (why every chunk is there), read against the snapshot the query ran on,
so a front end renders it and never reads the graph again."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import numpy as np

from cuerag.communities import COMMUNITY_METHODS, CommunityIndex, community_search, global_ranking
from cuerag.communities.browse import ThemeListing, list_themes
from cuerag.communities.theme_search import (
    MIN_BUDGET_TOKENS,
    GlobalSearchResult,
    ThemeSearch,
    documents_for,
    is_overview,
)
from cuerag.config import MAX_QUERY_CHARS, QIterParams
from cuerag.engine.parts import EngineParts
from cuerag.errors import ParameterError
from cuerag.llm.client import LLMUsage, require_llm
from cuerag.retrieval.answering import AnswerResult, generate_answer, llm_query_entities
from cuerag.retrieval.explain import ExplainedResult, GraphTitles, explain
from cuerag.retrieval.filters import DocFilter
from cuerag.retrieval.methods import run_method
from cuerag.retrieval.results import METHODS, Method
from cuerag.retrieval.retriever import Retriever
from cuerag.retrieval.scoring import make_scorer
from cuerag.retrieval.subset import select

log = logging.getLogger(__name__)


class Queries:
    def __init__(self, parts: EngineParts) -> None:
        self._p = parts

    def retriever(self, corpus: str, filter: DocFilter | None = None) -> Retriever:
        """Retrieval over the corpus's current snapshot, limited to the documents `filter` selects
        (all of them when None). A filter that selects nothing, or names an unknown document id,
        is a ParameterError saying so."""
        p = self._p
        graph = p.snapshots.graph(corpus)
        derived = p.snapshots.indexes(corpus, graph)
        subset = select(graph, derived.documents(), filter) if filter is not None else None
        p.checks.dim(corpus, graph.unit_vectors.shape[1], p.models)
        p.checks.vectors(corpus, graph, p.models, indexing=False)
        return Retriever(
            corpus=corpus,
            graph=graph,
            store=p.store,
            models=p.models,
            scorer=make_scorer(graph, p.models.reranker),
            derived=derived,
            subset=subset,
        )

    def retrieve(
        self,
        corpus: str,
        question: str,
        params: QIterParams | None,
        method: Method,
        llm_entities: bool,
        filter: DocFilter | None = None,
    ) -> tuple[ExplainedResult, LLMUsage | None]:
        """A retrieval, explained, and what the LLM spent reading the question's entities (None
        when it did not)."""
        _check_question(question)
        if method not in METHODS:
            raise ParameterError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
        params = params or QIterParams()
        retriever = self.retriever(corpus, filter)
        if retriever.note is not None:
            return ExplainedResult(
                corpus=corpus, query=question, method=method, chunks=[], elapsed_ms=0.0, note=retriever.note
            ), None
        usage = None
        entities: list[str] | None = None
        if method == "qiter" and llm_entities:
            entities, usage = llm_query_entities(require_llm(self._p.llm, "llm_entities"), question)
            if not entities:
                log.info("the LLM found no entities in %r; falling back to NER", question)
        if method in COMMUNITY_METHODS:  # global search and the two seed methods (cuerag.communities)
            index = self._p.snapshots.communities(corpus, retriever.graph, retriever.entity_vectors)
            result = community_search(retriever, index, question, method, params.top_n, params)
        else:
            result = run_method(retriever, question, method, params, text=self._p.text, entities=entities or None)
        return explain(result, GraphTitles(retriever.graph)), usage

    def communities(self, corpus: str) -> CommunityIndex:
        """The corpus's community hierarchies for its current snapshot."""
        retriever = self.retriever(corpus)
        return self._p.snapshots.communities(corpus, retriever.graph, retriever.entity_vectors)

    def global_search(self, corpus: str, question: str, budget_tokens: int) -> GlobalSearchResult:
        """Cited statements grouped by theme for a broad question (`cuerag.communities.theme_search`);
        an empty question, or one about the corpus itself, gets its top themes."""
        if question.strip():
            _check_question(question)
        if budget_tokens < MIN_BUDGET_TOKENS:
            raise ParameterError(f"budget_tokens must be at least {MIN_BUDGET_TOKENS}, not {budget_tokens}")
        if is_overview(question):
            # The top themes, from the stored reports: no model loads (a first call of a fresh
            # server for an overview took 6 s loading the embedder it never used).
            graph = self._p.snapshots.graph(corpus)
            index = self._p.snapshots.communities(corpus, graph, _no_entity_vectors)
            overview = ThemeSearch(corpus, graph, index.docs, index.hierarchy, index.reports, self._p.text.count_tokens)
            return overview.search(question, np.zeros(0, dtype=np.float32), None, budget_tokens)
        retriever = self.retriever(corpus)
        index = self._p.snapshots.communities(corpus, retriever.graph, retriever.entity_vectors)
        search = ThemeSearch(
            corpus, retriever.graph, index.docs, index.hierarchy, index.reports, self._p.text.count_tokens
        )
        qvec = retriever.embed_query(question)  # once: the ranking and the statements' cosines share it
        ranked = global_ranking(retriever, index, question, documents_for(budget_tokens), qvec=qvec)
        documents = [int(index.docs.chunk_doc[chunk]) for chunk, _ in ranked]
        return search.search(question, qvec, self._p.models.reranker, budget_tokens, documents)

    def themes(self, corpus: str, *, theme_id: str | None, level: int, offset: int, limit: int) -> ThemeListing:
        """The corpus's themes at a level, or one theme opened with its children, paged."""
        graph = self._p.snapshots.graph(corpus)
        # Browsing reads the stored reports only: no model, no vector needed.
        index = self._p.snapshots.communities(corpus, graph, _no_entity_vectors)
        return list_themes(
            corpus, index.hierarchy, index.reports, theme_id=theme_id, level=level, offset=offset, limit=limit
        )

    def answer(
        self,
        corpus: str,
        question: str,
        *,
        params: QIterParams | None,
        method: Method,
        llm_entities: bool,
        filter: DocFilter | None,
    ) -> AnswerResult:
        """Retrieve, then have the LLM answer from the top chunks (the paper's answer prompt)."""
        started = time.perf_counter()
        llm = require_llm(self._p.llm, "an answer")
        retrieval, entity_usage = self.retrieve(corpus, question, params, method, llm_entities, filter)
        if retrieval.note is not None:  # nothing to write an answer from: no call to the LLM
            raise ParameterError(retrieval.note)
        answer, usage = generate_answer(
            llm, question, retrieval.chunks, self._p.text, context_tokens=self._p.settings.llm_context_tokens
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


def _no_entity_vectors(entities: Sequence[int]) -> np.ndarray:
    raise AssertionError("browsing themes builds no entity layer")


def _check_question(question: str) -> None:
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
