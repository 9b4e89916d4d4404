"""The process that holds the index serves its engine to the other processes of this user.

`owning_engine` opens the engine of the process that holds the store's lock: a `CueRag` that
also listens on the data directory's socket (`place.py`) and runs each caller's call on its own
thread, with the caller's progress, cancellation and file checks carried over the connection.
Writes from every process meet the one engine's writer locks, so they are serialised as the
threads of one server are. Closing stops listening first, then the engine (and with it the lock):
a caller never finds the lock free while this process still answers.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import socket
import threading
from collections.abc import Callable
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, Listener, answer_challenge, deliver_challenge
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from cuerag.config import Settings
from cuerag.engine.sharing.ops import OPS, Request
from cuerag.engine.sharing.place import Place, place_of, read_key
from cuerag.engine.sharing.sockets import bound, hang_up, peer_of, socket_of, writable
from cuerag.engine.sharing.wire import MAX_MESSAGE, error_message, raised, receive, send, settings_digests
from cuerag.engine.surface import Engine
from cuerag.errors import Cancelled, CueRagError, OwnerBusy, SharingError

if TYPE_CHECKING:
    from cuerag.engine.facade import CueRag

log = logging.getLogger(__name__)

_JOIN_S = 30.0  # how long closing waits for calls under way (each stops at its next step)
# How long each read of a caller's handshake and request may wait. They run on the call's own
# thread, never the accepting one: a caller that connects and says nothing, or stops before its
# request is whole (stopped, hung, or hostile), holds one thread and one of `_MAX_CALLS` this
# long, not every other caller's calls for ever.
_HANDSHAKE_S = 10
# The most calls served at once (a thread, a descriptor and a request of up to MAX_MESSAGE each):
# beyond it a caller is refused at once (OwnerBusy, which it may retry), with no thread. Real use
# is a few processes: a server runs at most 40 engine calls at once (anyio's worker threads), each
# attached process holds one standby, the CLI one call; more than 64 at once is a runaway caller,
# and the bound keeps it from taking this process's threads and memory from the others.
_MAX_CALLS = 64
# A refusal is a few hundred bytes into a new socket's empty buffer: it does not wait, but the
# accepting thread never waits longer than this on one caller.
_REFUSE_S = 1.0
# How long a run waits on its caller to take a file check and answer it. The caller answers from a
# thread of its own, at once; one that does not within this bound is stopped (Ctrl-Z, a debugger)
# or hung, and the run, which holds the corpus's writer lock, must not wait on it for ever: it
# stops as a cancelled run does (a rerun completes it). Progress never waits at all (`_Peer`).
_CHECK_S = 30.0
_BACKLOG = 64  # connections the kernel queues while the accepting thread starts the previous ones
_FULL_PAUSE_S = 0.5  # out of descriptors or memory: the pending connection stays queued, so wait
_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def _same_user(conn: Connection) -> bool:
    """The peer's uid, from the kernel (SO_PEERCRED), is ours. The folder's mode already keeps
    other users out and the key is checked; this holds even if both were got round."""
    with socket_of(conn) as sock:
        peer = peer_of(sock)
    return peer is None or peer[1] == os.getuid()


class _Peer:
    """One caller's connection, as its call's run sees it. Progress may come from two threads
    (NER reports beside the embedding), so sends are locked; reads come from the run's thread.

    The run holds the index's writer lock while it reports, so nothing here waits on a caller that
    has stopped reading: a progress report that would wait is dropped (the next one says more), a
    file check not answered within `_CHECK_S` stops the run."""

    def __init__(self, conn: Connection, closing: threading.Event) -> None:
        self._conn = conn
        self._closing = closing
        self._send_lock = threading.Lock()
        self._recv_lock = threading.Lock()
        self._cancelled = False
        self._gone = False

    def progress(self, stage: str, done: int, total: int) -> None:
        if self._gone:
            return
        try:
            with self._send_lock:
                if writable(self._conn, 0):
                    send(self._conn, {"progress": [stage, done, total]})
        except OSError:
            self._gone = True

    def should_stop(self) -> bool:
        """Stop when the caller cancelled or went away (a killed CLI, a server that ended), or
        when this process is closing: the run leaves the corpus as a killed one would."""
        if self._closing.is_set() or self._gone or self._cancelled:
            return True
        with self._recv_lock:
            try:
                while self._conn.poll(0):
                    self._take(receive(self._conn))
            except (EOFError, OSError):
                self._gone = True
        return self._cancelled or self._gone

    def _take(self, message: dict[str, object]) -> None:
        if message.get("cancel"):
            self._cancelled = True

    def check(self, path: Path) -> object:
        """The caller's check of a file its run would read (an MCP server's allowed roots)."""
        try:
            with self._send_lock:
                if not writable(self._conn, _CHECK_S):
                    raise TimeoutError
                send(self._conn, {"ask": "check", "path": str(path)})
            with self._recv_lock:
                reply = self._answer()
                while "cancel" in reply:
                    self._take(reply)
                    reply = self._answer()
        except TimeoutError as exc:
            self._gone = True
            raise Cancelled(f"the caller of this index run did not answer a file check within {_CHECK_S:g} s") from exc
        except (EOFError, OSError) as exc:
            self._gone = True
            raise Cancelled("the caller of this index run went away") from exc
        error = reply.get("error")
        if isinstance(error, dict):
            raise raised(error)
        return path

    def _answer(self) -> dict[str, object]:
        if not self._conn.poll(_CHECK_S):
            raise TimeoutError
        return receive(self._conn)

    def wait_closed(self) -> None:
        with contextlib.suppress(EOFError, OSError):
            while True:
                self._conn.recv_bytes(64)


class Owner:
    """Serves `engine` on `place`'s socket until closed."""

    def __init__(self, engine: Engine, place: Place) -> None:
        self._engine = engine
        self._place = place
        self._digests = settings_digests(engine.settings)
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._calls: dict[Connection, threading.Thread] = {}
        self._refusing = False  # callers are being refused as too many: said once, not per caller
        # A socket file left by an owner that was killed: this process holds the lock now.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(place.socket)
        self._key = read_key(place)
        # No authkey here: `accept` would run the handshake on the accepting thread (`_admitted`).
        self._listener = Listener(place.socket, family="AF_UNIX", backlog=_BACKLOG)
        self._accepting = threading.Thread(target=self._accept, name="cuerag-share-accept", daemon=True)
        self._accepting.start()
        log.info("serving the index at %s to other processes (pid %d)", place.data_dir, os.getpid())

    def _accept(self) -> None:
        # Nothing a caller does may end this loop: without it the index stays held and served by
        # no one, and every other process waits on it.
        while not self._closing.is_set():
            try:
                conn = self._listener.accept()
            except OSError as exc:
                if self._closing.is_set():
                    continue
                log.warning("could not accept a connection to the index: %s", exc)
                if exc.errno in _OUT_OF_RESOURCES:
                    self._closing.wait(_FULL_PAUSE_S)
                continue
            if self._closing.is_set():
                conn.close()
                continue
            thread = threading.Thread(target=self._serve, args=(conn,), name="cuerag-share-call", daemon=True)
            with self._lock:
                in_progress = len(self._calls)
                if in_progress < _MAX_CALLS:
                    self._calls[conn] = thread
            if in_progress >= _MAX_CALLS:
                self._refuse(conn, in_progress)
                continue
            self._refusing = False
            try:
                thread.start()
            except RuntimeError as exc:  # no thread to be had: this caller is refused, not the next
                log.warning("could not serve a connection to the index: %s", exc)
                with self._lock:
                    self._calls.pop(conn, None)
                conn.close()

    def _refuse(self, conn: Connection, in_progress: int) -> None:
        """Tell a caller over `_MAX_CALLS` that this process is busy, in place of the handshake's
        challenge (the caller looks at its first message before answering it: `remote.py`), and
        hang up. Nothing of it is read: it may well be a caller that does not hold the key."""
        if not self._refusing:
            log.warning("refusing callers of the index: %d calls in progress, the most served at once", in_progress)
            self._refusing = True
        with contextlib.suppress(OSError), conn:
            bound(conn, _REFUSE_S)
            send(conn, {"error": error_message(OwnerBusy(os.getpid(), in_progress))})

    def _admitted(self, conn: Connection) -> bool:
        """The caller runs as this user and holds the key (both ends prove it), each read within
        `_HANDSHAKE_S` (a bound kept until its request is read); else it is refused."""
        try:
            if not _same_user(conn):
                return False
            bound(conn, _HANDSHAKE_S)
            deliver_challenge(conn, self._key)
            answer_challenge(conn, self._key)
        except (OSError, EOFError, AuthenticationError) as exc:  # a wrong key, silence, a caller gone
            if not self._closing.is_set():
                log.warning("refused a connection to the index: %s", type(exc).__name__)
            return False
        return True

    def _serve(self, conn: Connection) -> None:
        try:
            if not self._admitted(conn):
                return
            header = receive(conn)
            raw_args = conn.recv_bytes(MAX_MESSAGE)
            bound(conn, 0)  # a call may wait long between messages (a standby, a file check)
            op = OPS.get(str(header.get("op")))
            if op is None:
                raise SharingError(f"unknown operation {str(header.get('op'))[:40]!r}")
            request = Request.model_validate(header)
            self._check_settings(request.settings)
            args = op.args.model_validate_json(raw_args)
            result = op.run(self._engine, args, _Peer(conn, self._closing), request.callbacks)
            send(conn, {"result": op.result.dump_python(result, mode="json")})
        except (EOFError, OSError):
            pass  # the caller went away (or this process is closing): nothing to answer
        except CueRagError as exc:
            self._answer_error(conn, error_message(exc))
        except ValidationError as exc:
            self._answer_error(conn, error_message(SharingError(f"a malformed request: {exc.error_count()} errors")))
        except Exception as exc:  # a bug: the caller is told, this process goes on
            log.exception("a call from another process failed")
            self._answer_error(conn, error_message(SharingError(f"internal error: {type(exc).__name__}: {exc}")))
        finally:
            with self._lock:
                self._calls.pop(conn, None)
            conn.close()

    @staticmethod
    def _answer_error(conn: Connection, error: dict[str, object]) -> None:
        with contextlib.suppress(OSError):
            send(conn, {"error": error})

    def _check_settings(self, given: dict[str, str]) -> None:
        differing = sorted(k for k in self._digests.keys() | given.keys() if self._digests.get(k) != given.get(k))
        if differing:
            raise SharingError(
                f"the index at {self._place.data_dir} is served by process {os.getpid()}, whose settings differ "
                f"from this one's ({', '.join(differing)}): use the same settings, or stop that process"
            )

    def close(self) -> None:
        if self._closing.is_set():
            return
        self._closing.set()
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as wake:
            wake.connect(self._place.socket)  # accept() returns, fails the handshake, sees closing
        self._accepting.join(_JOIN_S)
        self._listener.close()  # removes the socket file
        with self._lock:
            calls = dict(self._calls)
        for conn in calls:
            hang_up(conn)
        for thread in calls.values():
            thread.join(_JOIN_S)


MakeEngine = Callable[[Settings], "CueRag"]


def own_engine(settings: Settings) -> CueRag:
    """This process's own engine. Its code is imported here, on the one path that opens the
    store: a process that attaches to another (a CLI query beside a running server) never loads
    the engine, its store or its model code."""
    from cuerag.engine.facade import CueRag

    return CueRag(settings)


def owning_engine(settings: Settings, make: MakeEngine = own_engine) -> CueRag:
    """The engine of the process holding the index (`make` opens it: IndexBusy when another
    holds it), serving it to the others until it closes."""
    engine = make(settings)
    try:
        owner = Owner(engine, place_of(settings.data_dir))
    except BaseException:
        engine.close()
        raise
    engine.on_close(owner.close)
    return engine
