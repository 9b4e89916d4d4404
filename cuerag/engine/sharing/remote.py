"""A process that found the index held by another uses it through that process.

`RemoteEngine` makes each engine call over a fresh connection to the owner's socket (a Unix
socket costs a fraction of a millisecond to open), relaying the owner's progress reports to the
caller's callback, the caller's cancellation (`should_stop`) to the owner, and the owner's
questions about files to the caller's `check`. When the owner ends (stopped, or killed: the
kernel closes its socket), the next call finds it gone and this process takes its place: it
takes the lock, opens the store and serves the others (`owning_engine`), and goes on through its
own socket, so one path serves every call. A call cut short is repeated where that is safe
(reads, index runs); a delete or drop cut short is reported as such. A long-lived process
(`standby`) keeps a connection open that ends when the owner does, so it takes over at once
rather than at its next call.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from multiprocessing.connection import Client, Connection
from pathlib import Path
from typing import Any, TypeVar

from cuerag.communities.browse import ThemeListing
from cuerag.communities.theme_search import GlobalSearchResult
from cuerag.config import Settings
from cuerag.engine.facade import CueRag
from cuerag.engine.reports import CorpusInfo, DeleteReport
from cuerag.engine.sharing import ops
from cuerag.engine.sharing.owner import MakeEngine, owning_engine
from cuerag.engine.sharing.place import Place, place_of, read_key
from cuerag.engine.sharing.wire import error_message, raised, receive, send, settings_digests
from cuerag.errors import CueRagError, IndexBusy, SharingError
from cuerag.graph.catalog import DocumentPage
from cuerag.graph.document_text import DocumentText
from cuerag.index.report import IndexReport, Progress, ShouldStop
from cuerag.ingest.documents import Document
from cuerag.ingest.folders import FileCheck, WalkRules
from cuerag.retrieval.answering import AnswerResult
from cuerag.retrieval.explain import ExplainedResult
from cuerag.retrieval.filters import DocFilter
from cuerag.retrieval.results import Anchor, ChunkNode, EntityExpansion, UnitHit, UnitNode
from cuerag.text.tools import TextTools

log = logging.getLogger(__name__)

T = TypeVar("T")
_POLL_S = 0.2  # how often a waiting call asks its caller whether to stop
_RETRY_S = 0.05  # between tries to reach a new owner


class OwnerGone(Exception):
    """The owner could not be reached, or its connection ended before the answer."""


class _Callbacks:
    def __init__(
        self, progress: Progress | None = None, should_stop: ShouldStop | None = None, check: FileCheck | None = None
    ) -> None:
        self.progress = progress
        self.should_stop = should_stop
        self.check = check


def own_or_attach(settings: Settings, *, standby: bool, make: MakeEngine = CueRag) -> CueRag | RemoteEngine:
    """This process's engine over the shared index: its own, serving the others, when it gets the
    lock; else the owner's, through its socket. Waits up to `share_wait_s` for an owner that holds
    the lock but does not answer yet (starting, or ended while another takes over)."""
    place = place_of(settings.data_dir)
    deadline = time.monotonic() + settings.share_wait_s
    while True:
        try:
            return owning_engine(settings, make)
        except IndexBusy as busy:
            try:
                return RemoteEngine(settings, place, standby=standby, make=make)
            except OwnerGone:
                if time.monotonic() > deadline:
                    raise SharingError(
                        f"{busy}; it does not answer on {place.socket} (sharing off there, or an older "
                        "cuerag): stop it, or wait for it to end"
                    ) from busy
            time.sleep(_RETRY_S)


class RemoteEngine:
    """The engine calls of `cuerag.engine.surface.Engine`, made by the owner of the index."""

    def __init__(self, settings: Settings, place: Place, *, standby: bool, make: MakeEngine = CueRag) -> None:
        self._settings = settings
        self._make = make
        self._place = place
        self._key = read_key(place)
        self._digests = settings_digests(settings)
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._held: CueRag | None = None  # this process's own engine, once it took over
        self._text = TextTools()
        self._standby_conn: Connection | None = None
        self._hello: ops.Hello = self._once("hello", ops.NoArgs(), _Callbacks())  # OwnerGone: none answers
        if standby:
            self._watch()

    # -- what a front end asks of it --

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def owner_pid(self) -> int:
        """The process that answers this one's calls (this process itself after a takeover)."""
        return int(self._hello.pid)

    @property
    def has_llm(self) -> bool:
        return bool(self._hello.has_llm)

    @property
    def text(self) -> TextTools:
        # The tokenizer that sizes results runs here: it needs nothing of the index.
        return self._text

    def corpora(self) -> list[str]:
        result: list[str] = self.call("corpora", ops.NoArgs())
        return result

    def info(self, corpus: str) -> CorpusInfo:
        result: CorpusInfo = self.call("info", ops.CorpusArgs(corpus=corpus))
        return result

    def sizes(self, corpus: str) -> dict[str, int]:
        result: dict[str, int] = self.call("sizes", ops.CorpusArgs(corpus=corpus))
        return result

    def drop_corpus(self, corpus: str) -> None:
        self.call("drop_corpus", ops.CorpusArgs(corpus=corpus))

    def index_documents(
        self,
        corpus: str,
        documents: Sequence[Document],
        *,
        progress: Progress | None = None,
        should_stop: ShouldStop | None = None,
    ) -> IndexReport:
        args = ops.IndexDocumentsArgs(corpus=corpus, documents=list(documents))
        result: IndexReport = self.call("index_documents", args, _Callbacks(progress, should_stop))
        return result

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
        args = ops.IndexPathsArgs(
            corpus=corpus,
            # The owner runs in another folder: a relative path means this process's folder.
            paths=[str(Path(p).absolute()) for p in paths],
            documents=list(documents),
            sync=sync,
            strict=strict,
            rules=rules,
            check=check is not None,
            known_failures=dict(known_failures) if known_failures is not None else None,
            full_report=full_report,
        )
        result: IndexReport = self.call("index_paths", args, _Callbacks(progress, should_stop, check))
        return result

    def delete_documents(self, corpus: str, doc_ids: Sequence[str]) -> DeleteReport:
        result: DeleteReport = self.call("delete_documents", ops.DeleteArgs(corpus=corpus, doc_ids=list(doc_ids)))
        return result

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
        args = ops.ReadArgs(
            corpus=corpus, doc_id=doc_id, chunk_id=chunk_id, start=start, max_chars=max_chars, context=context
        )
        result: DocumentText = self.call("read_document", args)
        return result

    def list_documents(
        self, corpus: str, *, filter: DocFilter | None = None, cursor: str | None = None, limit: int = 50
    ) -> DocumentPage:
        args = ops.ListArgs(corpus=corpus, filter=filter, cursor=cursor, limit=limit)
        result: DocumentPage = self.call("list_documents", args)
        return result

    def retriever(self, corpus: str, filter: DocFilter | None = None) -> RemoteRetriever:
        note: str | None = self.call("retriever.note", ops.ScopedArgs(corpus=corpus, filter=filter))
        return RemoteRetriever(self, corpus, filter, note)

    def query(self, corpus: str, question: str, **options: Any) -> ExplainedResult:
        """As `CueRag.query` (params, method, llm_entities, filter), answered by the owner."""
        result: ExplainedResult = self.call("query", ops.QueryArgs(corpus=corpus, question=question, **options))
        return result

    def answer(self, corpus: str, question: str, **options: Any) -> AnswerResult:
        """As `CueRag.answer`, answered by the owner."""
        result: AnswerResult = self.call("answer", ops.QueryArgs(corpus=corpus, question=question, **options))
        return result

    def global_search(self, corpus: str, question: str, *, budget_tokens: int = 2000) -> GlobalSearchResult:
        """As `CueRag.global_search`, answered by the owner."""
        args = ops.GlobalSearchArgs(corpus=corpus, question=question, budget_tokens=budget_tokens)
        result: GlobalSearchResult = self.call("global_search", args)
        return result

    def themes(
        self, corpus: str, *, theme_id: str | None = None, level: int = 0, offset: int = 0, limit: int = 20
    ) -> ThemeListing:
        """As `CueRag.themes`, answered by the owner."""
        args = ops.ThemesArgs(corpus=corpus, theme_id=theme_id, level=level, offset=offset, limit=limit)
        result: ThemeListing = self.call("themes", args)
        return result

    def close(self) -> None:
        self._closed.set()
        conn = self._standby_conn
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()
        with self._lock:
            held, self._held = self._held, None
        if held is not None:
            held.close()

    # -- the calls, and taking over --

    def call(self, name: str, args: ops.Args, callbacks: _Callbacks | None = None) -> Any:
        return self._call(name, args, callbacks or _Callbacks(), repeat=ops.OPS[name].repeatable)

    def _call(self, name: str, args: ops.Args, callbacks: _Callbacks, *, repeat: bool) -> Any:
        try:
            return self._once(name, args, callbacks)
        except OwnerGone:
            if self._closed.is_set():
                raise SharingError("this engine is closed") from None
            gone = self._hello.pid
            self._take_over(gone)
            if not repeat:
                raise SharingError(
                    f"the process serving the index (pid {gone}) ended during this {name.replace('_', ' ')}; "
                    "it may or may not have happened: look (list_documents, corpora), then run it again"
                ) from None
            log.info("the process serving the index ended during %s; repeating it", name)
            return self._once(name, args, callbacks)

    def _once(self, name: str, args: ops.Args, callbacks: _Callbacks) -> Any:
        op = ops.OPS[name]
        try:
            conn = Client(self._place.socket, family="AF_UNIX", authkey=self._key)
        except (OSError, EOFError) as exc:  # no socket, refused, or the handshake cut off
            raise OwnerGone(str(exc)) from exc
        with contextlib.closing(conn):
            try:
                send(conn, {"op": name, "settings": self._digests})
                conn.send_bytes(args.model_dump_json().encode())
                return self._await(conn, op, callbacks)
            except (EOFError, OSError) as exc:
                raise OwnerGone(str(exc)) from exc

    def _await(self, conn: Connection, op: ops.Op, callbacks: _Callbacks) -> Any:
        asked_to_stop = False
        while True:
            if not conn.poll(_POLL_S):
                if callbacks.should_stop is not None and not asked_to_stop and callbacks.should_stop():
                    send(conn, {"cancel": True})
                    asked_to_stop = True
                continue
            message = receive(conn)
            if "result" in message:
                return op.result.validate_python(message["result"])
            if "error" in message:
                raise raised(message["error"])
            if "progress" in message and callbacks.progress is not None:
                stage, done, total = message["progress"]
                callbacks.progress(str(stage), int(done), int(total))
            if message.get("ask") == "check":
                send(conn, self._checked(callbacks.check, str(message.get("path", ""))))

    @staticmethod
    def _checked(check: FileCheck | None, path: str) -> dict[str, Any]:
        if check is None:
            return {"checked": True}
        try:
            check(Path(path))
        except CueRagError as exc:
            return {"error": error_message(exc)}
        return {"checked": True}

    def _take_over(self, gone: int) -> None:
        """After the owner ended: this process becomes the owner, or attaches to the process that
        became it first. Once per ending: a call that finds it done returns at once."""
        with self._lock:
            if self._held is not None or self._closed.is_set():
                return
            deadline = time.monotonic() + self._settings.share_wait_s
            while True:
                if self._hello_again(gone):
                    return
                try:
                    self._held = owning_engine(self._settings, self._make)
                except IndexBusy:
                    if time.monotonic() > deadline:
                        raise SharingError(
                            f"the process serving the index (pid {gone}) ended and its successor does not answer"
                        ) from None
                    time.sleep(_RETRY_S)
                    continue
                self._hello_again(None)
                log.warning("the process serving the index (pid %s) ended: this process serves it now", gone)
                return

    def _hello_again(self, gone: int | None) -> bool:
        """Whether an owner other than `gone` answers now (and who it is)."""
        try:
            hello = self._once("hello", ops.NoArgs(), _Callbacks())
        except OwnerGone:
            return False
        if hello.pid == gone:  # still the old one, closing: wait for its end
            return False
        self._hello = hello
        return True

    def _watch(self) -> None:
        """Hold a standby connection to the owner; when it ends, take over at once."""

        def run() -> None:
            while not self._closed.is_set() and self._held is None:
                gone = self._hello.pid
                try:
                    conn = Client(self._place.socket, family="AF_UNIX", authkey=self._key)
                    self._standby_conn = conn
                    send(conn, {"op": "standby", "settings": self._digests})
                    conn.send_bytes(ops.NoArgs().model_dump_json().encode())
                    with contextlib.suppress(EOFError, OSError):
                        conn.recv_bytes(64)
                except (EOFError, OSError):
                    pass
                if self._closed.is_set():
                    return
                try:
                    self._take_over(gone)
                except CueRagError as exc:
                    log.warning("taking over the index failed: %s", exc)
                    time.sleep(1.0)

        threading.Thread(target=run, name="cuerag-share-standby", daemon=True).start()


class RemoteRetriever:
    """The tools' stepwise primitives (`cuerag.engine.surface.RetrieverView`), each one call."""

    def __init__(self, engine: RemoteEngine, corpus: str, filter: DocFilter | None, note: str | None) -> None:
        self._engine = engine
        self._corpus = corpus
        self._filter = filter
        self._note = note

    @property
    def note(self) -> str | None:
        return self._note

    def _ask(self, name: str, make: Callable[..., ops.ScopedArgs], **values: Any) -> Any:
        return self._engine.call(f"retriever.{name}", make(corpus=self._corpus, filter=self._filter, **values))

    def query_mentions(self, query: str) -> list[str]:
        result: list[str] = self._ask("query_mentions", ops.MentionsArgs, query=query)
        return result

    def link_mentions(self, mentions: Sequence[str], k: int) -> list[Anchor]:
        result: list[Anchor] = self._ask("link_mentions", ops.LinkArgs, mentions=list(mentions), k=k)
        return result

    def search_units(
        self, query: str, k: int, *, exclude: Sequence[str] = (), subtract: Sequence[str] = ()
    ) -> list[UnitHit]:
        values = {"query": query, "k": k, "exclude": list(exclude), "subtract": list(subtract)}
        result: list[UnitHit] = self._ask("search_units", ops.SearchArgs, **values)
        return result

    def expand_entity(
        self, entity: str, query: str, k: int, *, exclude: Sequence[str] = (), subtract: Sequence[str] = ()
    ) -> EntityExpansion:
        values = {"entity": entity, "query": query, "k": k, "exclude": list(exclude), "subtract": list(subtract)}
        result: EntityExpansion = self._ask("expand_entity", ops.ExpandArgs, **values)
        return result

    def chunks_by_id(self, ids: Sequence[str]) -> list[ChunkNode]:
        result: list[ChunkNode] = self._ask("chunks_by_id", ops.IdsArgs, ids=list(ids))
        return result

    def units_by_id(self, ids: Sequence[str]) -> list[UnitNode]:
        result: list[UnitNode] = self._ask("units_by_id", ops.IdsArgs, ids=list(ids))
        return result
