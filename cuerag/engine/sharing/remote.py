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

No wait is unbounded while the owner cannot answer (stopped by SIGSTOP or Ctrl-Z, held by a
debugger, hung): the connect, the handshake and the owner's hello get `_ANSWER_S`; a call waits as
long as the owner runs (an index run takes many minutes), and gives up once the owner has been
stopped for `_STOPPED_S`; a message under way that stalls for `_STALL_S` is given up on too. Each
ends in `OwnerNotAnswering`, which names the process. An owner serving as many calls as it may
refuses more at once (`OwnerBusy`, which a caller may retry).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar

from cuerag.config import Settings
from cuerag.engine.sharing import ops
from cuerag.engine.sharing.owner import MakeEngine, own_engine, owning_engine
from cuerag.engine.sharing.place import Place, place_of, read_key
from cuerag.engine.sharing.sockets import bound, bound_socket, peer_of, stopped
from cuerag.engine.sharing.wire import error_message, raised, receive, send, settings_digests
from cuerag.engine.surface import Engine, RetrieverView
from cuerag.errors import CueRagError, IndexBusy, OwnerNotAnswering, SharingError

# Types of annotations only: an attached process (a CLI query) imports what its calls' results
# need when they come (`ops`), not the engine's modules.
if TYPE_CHECKING:
    from cuerag.engine.facade import CueRag
    from cuerag.index.report import Progress, ShouldStop
    from cuerag.ingest.folders import FileCheck
    from cuerag.retrieval.filters import DocFilter
    from cuerag.text.tools import TextTools

log = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")
_POLL_S = 0.2  # how often a waiting call asks its caller whether to stop, and the owner's state
_RETRY_S = 0.05  # between tries to reach a new owner
# The connect, the handshake and the hello: a running owner answers them in milliseconds (its
# accepting thread does nothing else), so one that has not in this long does not answer.
_ANSWER_S = 5.0
# A call in progress is given up on once its owner has been stopped this long (a signal or a
# debugger: /proc says so). Not sooner: a profiler stops a process for a moment, and Ctrl-Z then
# `fg` should not fail the calls it serves. A running owner is waited for, however long the call.
_STOPPED_S = 10.0
# Each read and write of a call once it is made: a message under way arrives whole as fast as it
# is read, and a request's arguments are read at once; a stall this long is an owner that stopped
# mid-message (or a system where its state cannot be read).
_STALL_S = 30.0
_STANDBY_RETRY_S = 1.0  # between a standby's tries while the owner is busy or does not answer


class OwnerGone(Exception):
    """The owner could not be reached, or its connection ended before the answer."""


@dataclass(frozen=True)
class _Callbacks:
    """The caller's callbacks of one call (`ops.CALLBACKS`), run here at the owner's word."""

    progress: Progress | None = None
    should_stop: ShouldStop | None = None
    check: FileCheck | None = None

    def given(self) -> list[str]:
        return [name for name in sorted(ops.CALLBACKS) if getattr(self, name) is not None]


def _here(value: Any) -> Any:
    """A file the caller names (a path, or a list of them) as the owner must read it: the owner
    runs in another folder, and a relative path means the caller's."""
    if value is None:
        return None
    if isinstance(value, str | Path):
        return str(Path(value).absolute())
    return [_here(v) for v in value]


def _who(pid: int | None) -> str:
    return f"the process serving this index (pid {pid})" if pid else "the process serving this index"


def _not_answering(pid: int | None, waited: str) -> OwnerNotAnswering:
    if pid and stopped(pid):
        why = (
            "it is stopped (Ctrl-Z, SIGSTOP or a debugger): continue it "
            f"(`kill -CONT {pid}`, or `fg` in its terminal) or end it, then try again"
        )
    else:
        why = "it may be hung or overloaded: try again, or end it"
    return OwnerNotAnswering(f"{_who(pid)} does not answer ({waited}); {why}", pid)


def _unfinished(exc: OwnerNotAnswering, name: str) -> OwnerNotAnswering:
    """`exc` for a call that is not safe to repeat (a delete, a drop): it was sent, and may still be
    made when the owner continues."""
    return OwnerNotAnswering(
        f"{exc}; this {name.replace('_', ' ')} may still happen when it continues: look (list_documents, "
        "corpora) before running it again",
        exc.pid,
    )


class _Patience:
    """How long a call waits for the owner's next message: as long as the owner runs (an index run
    takes many minutes); not once it has been stopped for `_STOPPED_S`; not past `within` seconds
    where given (the hello, which a running owner answers at once)."""

    def __init__(self, pid: int | None, within: float | None) -> None:
        self._pid = pid
        self._within = within
        self._deadline = None if within is None else time.monotonic() + within
        self._stopped_since: float | None = None

    def check(self) -> None:
        """Raise OwnerNotAnswering when the wait is over; called between polls of the connection."""
        now = time.monotonic()
        if self._deadline is not None and now > self._deadline:
            raise _not_answering(self._pid, f"no answer within {self._within:g} s")
        if not self._pid or not stopped(self._pid):
            self._stopped_since = None
        elif self._stopped_since is None:
            self._stopped_since = now
        elif now - self._stopped_since >= _STOPPED_S:
            raise _not_answering(self._pid, f"stopped for {_STOPPED_S:g} s")


def _connect(place: Place, key: bytes) -> tuple[Connection, int | None]:
    """A connection to the owner, both ends authenticated (the key's HMAC challenge), with the
    owner's pid where the kernel says it; within `_ANSWER_S` (each read and write), else
    OwnerNotAnswering. OwnerGone: no owner listens, or it hung up (closing). OwnerBusy: it serves
    as many calls as it may. The connection is left without a bound: each use sets its own."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    pid: int | None = None
    try:
        bound_socket(sock, _ANSWER_S)  # a connect waits while the owner's backlog is full
        sock.connect(place.socket)
        peer = peer_of(sock)
        pid = peer[0] if peer else None
        # The owner's first message: the handshake's challenge, or, from an owner serving as many
        # calls as it may, its refusal (a JSON object: a challenge never starts with "{"). Looked
        # at, not taken, so the handshake reads the challenge itself.
        first = sock.recv(5, socket.MSG_PEEK)
    except BlockingIOError:
        sock.close()
        raise _not_answering(pid, f"no handshake within {_ANSWER_S:g} s") from None
    except OSError as exc:  # no socket, refused: no owner
        sock.close()
        raise OwnerGone(str(exc)) from exc
    if not first:
        sock.close()
        raise OwnerGone("the owner hung up")
    conn = Connection(sock.detach())
    try:
        if first[4:5] == b"{":
            error = receive(conn).get("error")
            raise raised(error) if isinstance(error, dict) else SharingError("a malformed refusal from the owner")
        answer_challenge(conn, key)
        deliver_challenge(conn, key)
        bound(conn, 0)
    except BlockingIOError:
        conn.close()
        raise _not_answering(pid, f"no handshake within {_ANSWER_S:g} s") from None
    except (EOFError, OSError) as exc:  # it hung up: closing, or another key
        conn.close()
        raise OwnerGone(str(exc)) from exc
    except BaseException:
        conn.close()
        raise
    return conn, pid


def own_or_attach(settings: Settings, *, standby: bool, make: MakeEngine = own_engine) -> CueRag | RemoteEngine:
    """This process's engine over the shared index: the owner's, through its socket, when one
    answers there; else its own, serving the others, when it gets the lock. Waits up to
    `share_wait_s` for an owner that holds the lock but does not answer yet (starting, or ended
    while another takes over).

    The socket is tried first: an owner that answers holds the lock (it stops listening before it
    releases it), and a process that attaches so never opens the store nor imports the engine, which
    is most of a CLI query's time beside a running server. With no owner the try costs a failed
    connect to a missing or dead socket."""
    place = place_of(settings.data_dir)
    deadline = time.monotonic() + settings.share_wait_s
    while True:
        try:
            return RemoteEngine(settings, place, standby=standby, make=make)
        except OwnerGone:
            pass
        try:
            return owning_engine(settings, make)
        except IndexBusy as busy:
            if time.monotonic() > deadline:
                raise SharingError(
                    f"{busy}; it does not answer on {place.socket} (sharing off there, or an older "
                    "cuerag): stop it, or wait for it to end"
                ) from busy
        time.sleep(_RETRY_S)


class _Forwarding(Protocol):
    def request(self, name: str, arguments: Mapping[str, Any], *, repeat: bool) -> Any: ...


def forwarded(method: Callable[Concatenate[Any, P], T], *, repeat: bool) -> Callable[Concatenate[_Forwarding, P], T]:
    """A protocol's call (`Engine.info`, `RetrieverView.search_units`), made by the process serving
    the index: the same signature, so a caller is type-checked as against the protocol. `repeat`:
    whether it may be made again when that process ended during it. Reads may, and index runs: a
    run cut short left earlier data intact and nothing of itself served, and a rerun completes it.
    A delete or a drop may not: the second would report as "not found" what the first removed."""
    name = method.__name__
    signature = inspect.signature(method)
    signature = signature.replace(parameters=list(signature.parameters.values())[1:])  # self

    def forward(self: _Forwarding, /, *args: P.args, **kwargs: P.kwargs) -> T:
        result: T = self.request(name, signature.bind(*args, **kwargs).arguments, repeat=repeat)
        return result

    forward.__name__ = name
    forward.__doc__ = f"As `{method.__qualname__}`, answered by the process serving the index."
    forward.__wrapped__ = method  # type: ignore[attr-defined]  # its signature, for inspect and tests
    return forward


class RemoteEngine:
    """The engine calls of `cuerag.engine.surface.Engine`, made by the owner of the index."""

    def __init__(self, settings: Settings, place: Place, *, standby: bool, make: MakeEngine = own_engine) -> None:
        self._settings = settings
        self._make = make
        self._place = place
        self._key = read_key(place)
        self._digests = settings_digests(settings)
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._held: CueRag | None = None  # this process's own engine, once it took over
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
    def models_loaded(self) -> bool:
        """Whether the owner's models were loaded when it last said hello (on attaching, or after
        a takeover): if not, the first call that needs them waits there while they load."""
        return bool(self._hello.models_loaded)

    @cached_property
    def text(self) -> TextTools:
        # The tokenizer that sizes results runs here: it needs nothing of the index. Imported on
        # first use (tiktoken): a CLI query never sizes a result.
        from cuerag.text.tools import TextTools

        return TextTools()

    # One line per call of the protocol: mypy holds this class to it, and the owner serves every
    # call the protocol has (ops.OPS); tests/engine/test_sharing_calls.py checks both meet.
    corpora = forwarded(Engine.corpora, repeat=True)
    info = forwarded(Engine.info, repeat=True)
    sizes = forwarded(Engine.sizes, repeat=True)
    drop_corpus = forwarded(Engine.drop_corpus, repeat=False)
    index_documents = forwarded(Engine.index_documents, repeat=True)
    index_paths = forwarded(Engine.index_paths, repeat=True)
    delete_documents = forwarded(Engine.delete_documents, repeat=False)
    read_document = forwarded(Engine.read_document, repeat=True)
    list_documents = forwarded(Engine.list_documents, repeat=True)
    query = forwarded(Engine.query, repeat=True)
    answer = forwarded(Engine.answer, repeat=True)
    global_search = forwarded(Engine.global_search, repeat=True)
    themes = forwarded(Engine.themes, repeat=True)

    def retriever(self, corpus: str, filter: DocFilter | None = None) -> RemoteRetriever:
        return RemoteRetriever(self, {"corpus": corpus, "filter": filter})

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

    def request(self, name: str, arguments: Mapping[str, Any], *, repeat: bool) -> Any:
        """Make the call `name` (an entry of `ops.OPS`) with `arguments` as the caller named them."""
        op = ops.OPS[name]
        values = dict(arguments)
        callbacks = _Callbacks(**{k: values.pop(k) for k in op.callbacks if k in values})
        for key in op.paths & values.keys():
            values[key] = _here(values[key])
        # Validated here too: a bad argument fails in its caller, as it would against a local engine.
        return self._call(name, op.args.model_validate(values), callbacks, repeat=repeat)

    def _call(self, name: str, args: ops.Args, callbacks: _Callbacks, *, repeat: bool) -> Any:
        try:
            return self._once(name, args, callbacks, repeat=repeat)
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
            return self._once(name, args, callbacks, repeat=repeat)

    def _once(self, name: str, args: ops.Args, callbacks: _Callbacks, *, repeat: bool = True) -> Any:
        op = ops.OPS[name]
        conn, pid = _connect(self._place, self._key)  # OwnerGone: no owner answers there
        with contextlib.closing(conn):
            try:
                bound(conn, _STALL_S)
                self._begin(conn, name, args, callbacks)
                # The hello is answered at once by a running owner; a call, whenever it is done.
                return self._await(conn, op, callbacks, _Patience(pid, _ANSWER_S if name == "hello" else None))
            except BlockingIOError:
                exc = _not_answering(pid, f"a message stalled for {_STALL_S:g} s")
                raise (exc if repeat else _unfinished(exc, name)) from None
            except OwnerNotAnswering as exc:
                raise (exc if repeat else _unfinished(exc, name)) from None
            except (EOFError, OSError) as exc:
                raise OwnerGone(str(exc)) from exc

    def _begin(self, conn: Connection, name: str, args: ops.Args, callbacks: _Callbacks) -> None:
        send(conn, ops.Request(op=name, settings=self._digests, callbacks=callbacks.given()).model_dump())
        # Only the arguments the caller gave (nested values whole): the owner's engine applies its
        # own defaults, as to a local call.
        conn.send_bytes(args.model_dump_json(include=args.model_fields_set).encode())

    def _await(self, conn: Connection, op: ops.Op, callbacks: _Callbacks, patience: _Patience) -> Any:
        asked_to_stop = False
        while True:
            if not conn.poll(_POLL_S):
                if callbacks.should_stop is not None and not asked_to_stop and callbacks.should_stop():
                    send(conn, {"cancel": True})
                    asked_to_stop = True
                patience.check()
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
                    conn, _pid = _connect(self._place, self._key)
                except OwnerGone:
                    pass
                except SharingError as exc:  # busy, or not answering: it is there, and holds the index
                    log.debug("the standby connection waits: %s", exc)
                    self._closed.wait(_STANDBY_RETRY_S)
                    continue
                else:
                    self._standby_conn = conn
                    with contextlib.suppress(EOFError, OSError):  # no bound: it ends when the owner does
                        self._begin(conn, "standby", ops.NoArgs(), _Callbacks())
                        conn.recv_bytes(64)
                if self._closed.is_set():
                    return
                try:
                    self._take_over(gone)
                except CueRagError as exc:
                    log.warning("taking over the index failed: %s", exc)
                    time.sleep(1.0)

        threading.Thread(target=run, name="cuerag-share-standby", daemon=True).start()


class RemoteRetriever:
    """The tools' stepwise primitives (`cuerag.engine.surface.RetrieverView`), each one call, for
    which the owner makes the retriever of the same corpus and filter."""

    def __init__(self, engine: RemoteEngine, scope: Mapping[str, Any]) -> None:
        self._engine = engine
        self._scope = dict(scope)  # the arguments of `Engine.retriever`
        # Read when the retriever is made, as a local one's: an unknown corpus fails here.
        self._note: str | None = self.request("note", {}, repeat=True)

    @property
    def note(self) -> str | None:
        return self._note

    def request(self, name: str, arguments: Mapping[str, Any], *, repeat: bool) -> Any:
        return self._engine.request(ops.VIEW + name, {**self._scope, **arguments}, repeat=repeat)

    query_mentions = forwarded(RetrieverView.query_mentions, repeat=True)
    link_mentions = forwarded(RetrieverView.link_mentions, repeat=True)
    search_units = forwarded(RetrieverView.search_units, repeat=True)
    expand_entity = forwarded(RetrieverView.expand_entity, repeat=True)
    chunks_by_id = forwarded(RetrieverView.chunks_by_id, repeat=True)
    units_by_id = forwarded(RetrieverView.units_by_id, repeat=True)
