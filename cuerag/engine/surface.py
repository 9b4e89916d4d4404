"""What the front ends (the MCP tools, the CLI, a folder watch) call an engine by: `CueRag` in
this process, or the same calls made to the process that serves the index
(`cuerag.engine.sharing`). Typed as protocols so either fits wherever an engine is expected.

The types the calls take and return are imported when an annotation is resolved
(`ANNOTATION_TYPES`), not with this module: a process that makes its calls through another (a CLI
query beside a running server) imports the modules of the one call it makes
(`cuerag.engine.sharing.ops`), not those of every call (the engine's communities, its LLM client,
its indexing reports)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from cuerag.config import Settings

if TYPE_CHECKING:
    from cuerag.communities.browse import ThemeListing
    from cuerag.communities.theme_search import GlobalSearchResult
    from cuerag.config import QIterParams
    from cuerag.engine.reports import CorpusInfo, DeleteReport
    from cuerag.graph.catalog import DocumentPage
    from cuerag.graph.document_text import DocumentText
    from cuerag.index.report import IndexReport, Progress, ShouldStop
    from cuerag.ingest.documents import Document
    from cuerag.ingest.folders import FileCheck, WalkRules
    from cuerag.retrieval.answering import AnswerResult
    from cuerag.retrieval.explain import ExplainedResult
    from cuerag.retrieval.filters import DocFilter
    from cuerag.retrieval.results import Anchor, ChunkNode, EntityExpansion, Method, UnitHit, UnitNode
    from cuerag.text.tools import TextTools


class _Imported(Mapping[str, Any]):
    """Names and their homes; a name looked up is imported from its home then."""

    def __init__(self, homes: Mapping[str, str]) -> None:
        self._homes = dict(homes)

    def __getitem__(self, name: str) -> Any:
        return getattr(importlib.import_module(self._homes[name]), name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._homes)

    def __len__(self) -> int:
        return len(self._homes)


# The types the annotations below name beyond this module's own imports, by home (the imports
# above, for type checkers): the namespace that resolves them, `typing.get_type_hints(call,
# localns=ANNOTATION_TYPES)`. tests/engine/test_sharing_calls.py resolves every annotation of both
# protocols: a type missing here fails it.
ANNOTATION_TYPES: Mapping[str, Any] = _Imported(
    {
        "ThemeListing": "cuerag.communities.browse",
        "GlobalSearchResult": "cuerag.communities.theme_search",
        "QIterParams": "cuerag.config",
        "CorpusInfo": "cuerag.engine.reports",
        "DeleteReport": "cuerag.engine.reports",
        "DocumentPage": "cuerag.graph.catalog",
        "DocumentText": "cuerag.graph.document_text",
        "IndexReport": "cuerag.index.report",
        "Progress": "cuerag.index.report",
        "ShouldStop": "cuerag.index.report",
        "Document": "cuerag.ingest.documents",
        "FileCheck": "cuerag.ingest.folders",
        "WalkRules": "cuerag.ingest.folders",
        "AnswerResult": "cuerag.retrieval.answering",
        "ExplainedResult": "cuerag.retrieval.explain",
        "DocFilter": "cuerag.retrieval.filters",
        "Anchor": "cuerag.retrieval.results",
        "ChunkNode": "cuerag.retrieval.results",
        "EntityExpansion": "cuerag.retrieval.results",
        "Method": "cuerag.retrieval.results",
        "UnitHit": "cuerag.retrieval.results",
        "UnitNode": "cuerag.retrieval.results",
        "TextTools": "cuerag.text.tools",
    }
)


class RetrieverView(Protocol):
    """The stepwise primitives of `cuerag.retrieval.retriever.Retriever` that the tools use."""

    @property
    def note(self) -> str | None: ...

    def query_mentions(self, query: str) -> list[str]: ...

    def link_mentions(self, mentions: Sequence[str], k: int) -> list[Anchor]: ...

    def search_units(
        self, query: str, k: int, *, exclude: Sequence[str] = (), subtract: Sequence[str] = ()
    ) -> list[UnitHit]: ...

    def expand_entity(
        self, entity: str, query: str, k: int, *, exclude: Sequence[str] = (), subtract: Sequence[str] = ()
    ) -> EntityExpansion: ...

    def chunks_by_id(self, ids: Sequence[str]) -> list[ChunkNode]: ...

    def units_by_id(self, ids: Sequence[str]) -> list[UnitNode]: ...


class Engine(Protocol):
    """The engine's calls as the front ends make them (see `cuerag.engine.facade.CueRag`)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def has_llm(self) -> bool: ...

    # Whether the models are loaded: if not, the first call that needs them waits while they load.
    @property
    def models_loaded(self) -> bool: ...

    @property
    def text(self) -> TextTools: ...

    def corpora(self) -> list[str]: ...

    def info(self, corpus: str) -> CorpusInfo: ...

    def sizes(self, corpus: str) -> dict[str, int]: ...

    def drop_corpus(self, corpus: str) -> None: ...

    def index_documents(
        self,
        corpus: str,
        documents: Sequence[Document],
        *,
        progress: Progress | None = None,
        should_stop: ShouldStop | None = None,
    ) -> IndexReport: ...

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
    ) -> IndexReport: ...

    def delete_documents(self, corpus: str, doc_ids: Sequence[str]) -> DeleteReport: ...

    def read_document(
        self,
        corpus: str,
        doc_id: str | None = None,
        *,
        chunk_id: str | None = None,
        start: int = 0,
        max_chars: int = 20_000,
        context: int = 1_000,
    ) -> DocumentText: ...

    def list_documents(
        self, corpus: str, *, filter: DocFilter | None = None, cursor: str | None = None, limit: int = 50
    ) -> DocumentPage: ...

    def retriever(self, corpus: str, filter: DocFilter | None = None) -> RetrieverView: ...

    def query(
        self,
        corpus: str,
        question: str,
        *,
        params: QIterParams | None = None,
        method: Method = "qiter",
        llm_entities: bool = False,
        filter: DocFilter | None = None,
    ) -> ExplainedResult: ...

    def answer(
        self,
        corpus: str,
        question: str,
        *,
        params: QIterParams | None = None,
        method: Method = "qiter",
        llm_entities: bool = False,
        filter: DocFilter | None = None,
    ) -> AnswerResult: ...

    def global_search(self, corpus: str, question: str, *, budget_tokens: int = 2000) -> GlobalSearchResult: ...

    def themes(
        self, corpus: str, *, theme_id: str | None = None, level: int = 0, offset: int = 0, limit: int = 20
    ) -> ThemeListing: ...

    def close(self) -> None: ...
