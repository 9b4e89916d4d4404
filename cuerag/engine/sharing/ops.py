"""The engine calls a caller may ask of the process serving the index: for each, its arguments
(validated on arrival, so nothing from the socket reaches the engine unchecked), its result's
type, whether it may be repeated after the serving process ended during it, and how the owner
runs it."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, TypeAdapter

from cuerag.communities.browse import ThemeListing
from cuerag.communities.theme_search import GlobalSearchResult
from cuerag.config import QIterParams
from cuerag.engine.facade import CueRag
from cuerag.engine.reports import CorpusInfo, DeleteReport
from cuerag.graph.catalog import DocumentPage
from cuerag.graph.document_text import DocumentText
from cuerag.index.report import IndexReport
from cuerag.ingest.documents import Document
from cuerag.ingest.folders import WalkRules
from cuerag.retrieval.answering import AnswerResult
from cuerag.retrieval.explain import ExplainedResult
from cuerag.retrieval.filters import DocFilter
from cuerag.retrieval.results import Anchor, ChunkNode, EntityExpansion, Method, UnitHit, UnitNode


class Peer(Protocol):
    """The caller, as the owner's run of its call sees it."""

    def progress(self, stage: str, done: int, total: int) -> None: ...

    def should_stop(self) -> bool: ...

    def check(self, path: Path) -> object: ...

    def wait_closed(self) -> None: ...


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoArgs(Args):
    pass


class Hello(BaseModel):
    pid: int
    has_llm: bool


class CorpusArgs(Args):
    corpus: str


class IndexDocumentsArgs(CorpusArgs):
    documents: list[Document]


class IndexPathsArgs(CorpusArgs):
    paths: list[str]
    documents: list[Document] = []
    sync: bool = False
    strict: bool = False
    rules: WalkRules | None = None
    check: bool = False  # the caller checks each file (an MCP server's allowed roots)
    known_failures: dict[str, str] | None = None
    full_report: bool = False


class DeleteArgs(CorpusArgs):
    doc_ids: list[str]


class ReadArgs(CorpusArgs):
    doc_id: str | None
    chunk_id: str | None
    start: int
    max_chars: int
    context: int


class ListArgs(CorpusArgs):
    filter: DocFilter | None
    cursor: str | None
    limit: int


class QueryArgs(CorpusArgs):
    question: str
    params: QIterParams | None = None
    method: Method = "qiter"
    llm_entities: bool = False
    filter: DocFilter | None = None


class GlobalSearchArgs(CorpusArgs):
    question: str
    budget_tokens: int


class ThemesArgs(CorpusArgs):
    theme_id: str | None
    level: int
    offset: int
    limit: int


class ScopedArgs(CorpusArgs):
    """A retriever's call: the retriever is made for the corpus and filter on each call."""

    filter: DocFilter | None


class MentionsArgs(ScopedArgs):
    query: str


class LinkArgs(ScopedArgs):
    mentions: list[str]
    k: int


class SearchArgs(ScopedArgs):
    query: str
    k: int
    exclude: list[str]
    subtract: list[str]


class ExpandArgs(SearchArgs):
    entity: str


class IdsArgs(ScopedArgs):
    ids: list[str]


@dataclass(frozen=True)
class Op:
    args: type[Args]
    result: TypeAdapter[Any]
    repeatable: bool  # safe to run again after the owner ended during it
    run: Callable[[CueRag, Any, Peer], Any]


def _standby(engine: CueRag, args: NoArgs, peer: Peer) -> None:
    peer.wait_closed()  # held open while the caller is attached: its end tells of the owner's


def _index_paths(engine: CueRag, a: IndexPathsArgs, peer: Peer) -> IndexReport:
    return engine.index_paths(
        a.corpus,
        a.paths,
        documents=a.documents,
        sync=a.sync,
        strict=a.strict,
        rules=a.rules,
        check=peer.check if a.check else None,
        progress=peer.progress,
        should_stop=peer.should_stop,
        known_failures=a.known_failures,
        full_report=a.full_report,
    )


def _query(engine: CueRag, a: QueryArgs, peer: Peer) -> ExplainedResult:
    return engine.query(
        a.corpus, a.question, params=a.params, method=a.method, llm_entities=a.llm_entities, filter=a.filter
    )


def _answer(engine: CueRag, a: QueryArgs, peer: Peer) -> AnswerResult:
    return engine.answer(
        a.corpus, a.question, params=a.params, method=a.method, llm_entities=a.llm_entities, filter=a.filter
    )


def _expand(engine: CueRag, a: ExpandArgs, peer: Peer) -> EntityExpansion:
    retriever = engine.retriever(a.corpus, a.filter)
    return retriever.expand_entity(a.entity, a.query, a.k, exclude=a.exclude, subtract=a.subtract)


def _search(engine: CueRag, a: SearchArgs, peer: Peer) -> list[UnitHit]:
    return engine.retriever(a.corpus, a.filter).search_units(a.query, a.k, exclude=a.exclude, subtract=a.subtract)


def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


# Index runs may be repeated: a run the owner's end cut short left earlier data intact and nothing
# of itself served, and a rerun completes it (cuerag.index.pipeline). A delete or a drop is not
# repeated: the second would report as "not found" what the first removed.
OPS: dict[str, Op] = {
    "hello": Op(NoArgs, _adapter(Hello), True, lambda e, a, p: Hello(pid=os.getpid(), has_llm=e.has_llm)),
    "standby": Op(NoArgs, _adapter(None), False, _standby),
    "corpora": Op(NoArgs, _adapter(list[str]), True, lambda e, a, p: e.corpora()),
    "info": Op(CorpusArgs, _adapter(CorpusInfo), True, lambda e, a, p: e.info(a.corpus)),
    "sizes": Op(CorpusArgs, _adapter(dict[str, int]), True, lambda e, a, p: e.sizes(a.corpus)),
    "drop_corpus": Op(CorpusArgs, _adapter(None), False, lambda e, a, p: e.drop_corpus(a.corpus)),
    "index_documents": Op(
        IndexDocumentsArgs,
        _adapter(IndexReport),
        True,
        lambda e, a, p: e.index_documents(a.corpus, a.documents, progress=p.progress, should_stop=p.should_stop),
    ),
    "index_paths": Op(IndexPathsArgs, _adapter(IndexReport), True, _index_paths),
    "delete_documents": Op(
        DeleteArgs, _adapter(DeleteReport), False, lambda e, a, p: e.delete_documents(a.corpus, a.doc_ids)
    ),
    "read_document": Op(
        ReadArgs,
        _adapter(DocumentText),
        True,
        lambda e, a, p: e.read_document(
            a.corpus, a.doc_id, chunk_id=a.chunk_id, start=a.start, max_chars=a.max_chars, context=a.context
        ),
    ),
    "list_documents": Op(
        ListArgs,
        _adapter(DocumentPage),
        True,
        lambda e, a, p: e.list_documents(a.corpus, filter=a.filter, cursor=a.cursor, limit=a.limit),
    ),
    "query": Op(QueryArgs, _adapter(ExplainedResult), True, _query),
    "answer": Op(QueryArgs, _adapter(AnswerResult), True, _answer),
    "global_search": Op(
        GlobalSearchArgs,
        _adapter(GlobalSearchResult),
        True,
        lambda e, a, p: e.global_search(a.corpus, a.question, budget_tokens=a.budget_tokens),
    ),
    "themes": Op(
        ThemesArgs,
        _adapter(ThemeListing),
        True,
        lambda e, a, p: e.themes(a.corpus, theme_id=a.theme_id, level=a.level, offset=a.offset, limit=a.limit),
    ),
    "retriever.note": Op(ScopedArgs, _adapter(str | None), True, lambda e, a, p: e.retriever(a.corpus, a.filter).note),
    "retriever.query_mentions": Op(
        MentionsArgs, _adapter(list[str]), True, lambda e, a, p: e.retriever(a.corpus, a.filter).query_mentions(a.query)
    ),
    "retriever.link_mentions": Op(
        LinkArgs,
        _adapter(list[Anchor]),
        True,
        lambda e, a, p: e.retriever(a.corpus, a.filter).link_mentions(a.mentions, a.k),
    ),
    "retriever.search_units": Op(SearchArgs, _adapter(list[UnitHit]), True, _search),
    "retriever.expand_entity": Op(ExpandArgs, _adapter(EntityExpansion), True, _expand),
    "retriever.chunks_by_id": Op(
        IdsArgs, _adapter(list[ChunkNode]), True, lambda e, a, p: e.retriever(a.corpus, a.filter).chunks_by_id(a.ids)
    ),
    "retriever.units_by_id": Op(
        IdsArgs, _adapter(list[UnitNode]), True, lambda e, a, p: e.retriever(a.corpus, a.filter).units_by_id(a.ids)
    ),
}
