"""The calls that cross between a process and the one serving its index (cuerag.engine.sharing),
against a stand-in engine served in this process: every call of the `Engine` protocol is served,
and reaches the owner's engine by name with the arguments its caller gave; callbacks, relative
paths and the owner's end during a call behave as the protocol's caller expects. No models: the
real engine across real processes is tests/server/test_sharing.py."""

from __future__ import annotations

import contextlib
import errno
import inspect
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Client
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

import pytest

from cuerag.config import Settings
from cuerag.engine.sharing import ops
from cuerag.engine.sharing import owner as owner_module
from cuerag.engine.sharing.owner import Owner
from cuerag.engine.sharing.place import place_of, read_key
from cuerag.engine.sharing.remote import RemoteEngine, RemoteRetriever
from cuerag.engine.sharing.wire import receive, send, settings_digests
from cuerag.engine.surface import ANNOTATION_TYPES, Engine, RetrieverView
from cuerag.errors import Cancelled, OwnerBusy, SharingError

LOCAL_MEMBERS = {"settings", "has_llm", "models_loaded", "text", "close", "retriever"}


def _members(protocol: type) -> tuple[set[str], set[str]]:
    public = {k: v for k, v in vars(protocol).items() if not k.startswith("_")}
    calls = {k for k, v in public.items() if inspect.isfunction(v)}
    return calls, {k for k, v in public.items() if isinstance(v, property)}


def test_every_call_of_the_engine_protocol_is_served() -> None:
    calls, properties = _members(Engine)
    assert calls | properties >= LOCAL_MEMBERS
    for name in calls - LOCAL_MEMBERS:
        assert name in ops.OPS, f"Engine.{name} is not served to attached processes"
        assert getattr(RemoteEngine, name).__wrapped__ is getattr(Engine, name), f"RemoteEngine.{name}"
    for name in LOCAL_MEMBERS:
        assert name in vars(RemoteEngine), f"RemoteEngine.{name}"
    view_calls, view_properties = _members(RetrieverView)
    for name in view_calls:
        assert ops.VIEW + name in ops.OPS
        assert getattr(RemoteRetriever, name).__wrapped__ is getattr(RetrieverView, name), f"RemoteRetriever.{name}"
    for name in view_properties:
        assert ops.VIEW + name in ops.OPS
    # And nothing else: the table is the protocol's calls and the two of the sharing itself.
    served = (calls - LOCAL_MEMBERS) | {ops.VIEW + n for n in view_calls | view_properties} | {"hello", "standby"}
    assert set(ops.OPS) == served


def test_every_entry_of_the_table_is_built_from_the_protocol() -> None:
    # Each entry is built on its first use (its types imported then): here all are, so that a type
    # the protocols name but `surface.ANNOTATION_TYPES` lacks fails now, not in a user's call.
    for name in ops.OPS:
        assert ops.OPS[name] is ops.OPS[name], name  # built once
    with pytest.raises(KeyError):
        ops.OPS["close"]


class Stand:
    """A stand-in for the owner's engine: each call of the protocol answers with an error naming
    the call and the arguments that reached it (an error crosses back as its own class, so no
    result of each call's type need be made here); a few calls do what a test needs."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.has_llm = False
        self.models_loaded = False
        self.closers: list[Callable[[], None]] = []
        self.started = threading.Event()
        self.release = threading.Event()
        self.block = False

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name not in _members(Engine)[0]:
            raise AttributeError(name)

        def reached(*args: Any, **kwargs: Any) -> Any:
            raise SharingError(json.dumps({"call": name, "args": len(args), "kwargs": sorted(kwargs)}))

        return reached

    def retriever(self, corpus: str, filter: object = None) -> View:
        return View(corpus)

    def _wait(self) -> None:
        if self.block:
            self.started.set()
            assert self.release.wait(30)

    def sizes(self, corpus: str) -> dict[str, int]:
        self._wait()
        return {"documents": len(corpus)}

    def delete_documents(self, corpus: str, doc_ids: Sequence[str]) -> object:
        self._wait()
        raise SharingError("the test ends the owner before this returns")

    def index_paths(self, corpus: str, paths: Sequence[str], **kwargs: Any) -> object:
        if "progress" in kwargs:
            kwargs["progress"]("reading", 1, len(paths))
        if "check" in kwargs:
            for path in paths:
                kwargs["check"](Path(path))
        reached = {"call": "index_paths", "args": 0, "kwargs": sorted({"corpus", "paths", *kwargs})}
        raise SharingError(json.dumps({**reached, "paths": list(paths), "stopped": kwargs["should_stop"]()}))

    def on_close(self, closer: Callable[[], None]) -> None:
        self.closers.append(closer)

    def close(self) -> None:
        while self.closers:
            self.closers.pop()()


class View:
    def __init__(self, corpus: str) -> None:
        self.note = f"note of {corpus}"

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name not in _members(RetrieverView)[0]:
            raise AttributeError(name)

        def reached(*args: Any, **kwargs: Any) -> Any:
            raise SharingError(json.dumps({"call": f"retriever.{name}", "args": len(args), "kwargs": sorted(kwargs)}))

        return reached


class Served:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.place = place_of(settings.data_dir)
        self.stands: list[Stand] = []
        self.owner = Owner(self.make(settings), self.place)  # type: ignore[arg-type]

    def make(self, settings: Settings) -> Stand:
        """Also this engine's successor, when a caller takes the index over."""
        if self.stands:
            self.stands[-1].release.set()  # the ended owner's call returns (its answer goes nowhere)
        self.stands.append(Stand(settings))
        return self.stands[-1]

    def remote(self) -> RemoteEngine:
        return RemoteEngine(self.settings, self.place, standby=False, make=self.make)  # type: ignore[arg-type]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    settings = Settings(data_dir=tmp_path / "data")
    served = Served(settings)
    yield served
    served.owner.close()
    for stand in served.stands:
        stand.release.set()
        stand.close()
    served.place.key_file.unlink(missing_ok=True)


def _example(hint: Any) -> Any:
    """A value of a required argument's type."""
    origin = get_origin(hint)
    if hint is str:
        return "x"
    if hint is int:
        return 3
    if origin in (list, Sequence) or hint is Sequence:
        return []
    if origin is Union or type(hint).__name__ == "UnionType":
        return _example(get_args(hint)[0])
    raise AssertionError(f"no example of {hint}: add one")


def _reached(error: pytest.ExceptionInfo[SharingError]) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(str(error.value))
    return found


@pytest.mark.parametrize("name", sorted(_members(Engine)[0] - LOCAL_MEMBERS - {"sizes", "delete_documents"}))
def test_each_call_reaches_the_owners_engine_with_only_the_arguments_given(served: Served, name: str) -> None:
    hints = get_type_hints(getattr(Engine, name), localns=ANNOTATION_TYPES)
    required = [
        p for p in list(inspect.signature(getattr(Engine, name)).parameters.values())[1:] if p.default is p.empty
    ]
    remote = served.remote()
    with pytest.raises(SharingError) as error:
        getattr(remote, name)(*[_example(hints[p.name]) for p in required])
    # By name, and no argument the caller left out (the owner's engine applies its own defaults)
    # but its cancellation: the run stops when its caller goes away.
    given = {p.name for p in required} | (ops.ALWAYS & set(hints))
    assert {k: v for k, v in _reached(error).items() if k in ("call", "args", "kwargs")} == {
        "call": name,
        "args": 0,
        "kwargs": sorted(given),
    }


@pytest.mark.parametrize("name", sorted(_members(RetrieverView)[0]))
def test_each_retriever_call_reaches_a_retriever_of_the_same_corpus(served: Served, name: str) -> None:
    method = getattr(RetrieverView, name)
    hints = get_type_hints(method, localns=ANNOTATION_TYPES)
    required = [p for p in list(inspect.signature(method).parameters.values())[1:] if p.default is p.empty]
    view = served.remote().retriever("ships")
    assert view.note == "note of ships"
    with pytest.raises(SharingError) as error:
        getattr(view, name)(*[_example(hints[p.name]) for p in required])
    assert _reached(error) == {"call": f"retriever.{name}", "args": 0, "kwargs": sorted(p.name for p in required)}


def test_an_index_run_carries_progress_checks_and_the_callers_folder(
    served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    progress: list[tuple[str, int, int]] = []
    asked: list[Path] = []
    with pytest.raises(SharingError) as error:
        served.remote().index_paths(
            "c", ["notes/a.md", tmp_path / "b.md"], check=asked.append, progress=lambda *a: progress.append(a)
        )
    reached = _reached(error)
    # A relative path means the caller's folder, not the owner's.
    assert reached["paths"] == [str(tmp_path / "notes" / "a.md"), str(tmp_path / "b.md")]
    assert reached["kwargs"] == ["check", "corpus", "paths", "progress", "should_stop"]
    assert reached["stopped"] is False
    assert progress == [("reading", 1, 2)]
    assert asked == [tmp_path / "notes" / "a.md", tmp_path / "b.md"]


def test_a_refused_file_stops_the_owners_run(served: Served) -> None:
    def refuse(path: Path) -> None:
        raise Cancelled(f"not under an allowed root: {path}")

    with pytest.raises(Cancelled, match="not under an allowed root"):
        served.remote().index_paths("c", ["/elsewhere/a.md"], check=refuse)


def _raw(served: Served, header: dict[str, Any], args: bytes) -> dict[str, Any]:
    conn = Client(served.place.socket, family="AF_UNIX", authkey=read_key(served.place))
    with conn:
        send(conn, header)
        conn.send_bytes(args)
        return receive(conn)


def test_the_owners_hello_says_whether_its_models_are_loaded(served: Served) -> None:
    assert served.remote().models_loaded is False  # its first query will wait for them
    served.stands[-1].models_loaded = True
    assert served.remote().models_loaded is True


def test_the_owner_serves_only_its_table_and_validates_every_argument(served: Served) -> None:
    digests = settings_digests(served.settings)
    for op in ("close", "__init__", "retriever", "graph"):
        answer = _raw(served, {"op": op, "settings": digests}, b"{}")
        assert "unknown operation" in answer["error"]["message"], op
    for args in (b'{"corpus": 3}', b'{"corpus": "c", "extra": 1}', b"{}", b"\x80\x04pickle"):
        answer = _raw(served, {"op": "sizes", "settings": digests}, args)
        assert "malformed request" in answer["error"]["message"], args
    answer = _raw(served, {"op": "sizes", "settings": {**digests, "alpha": "0"}}, b'{"corpus": "c"}')
    assert "settings differ" in answer["error"]["message"]
    assert _raw(served, {"op": "sizes", "settings": digests}, b'{"corpus": "abc"}') == {"result": {"documents": 3}}


def _owner_ends_during(served: Served, call: Callable[[RemoteEngine], object]) -> object:
    """Make `call` while the owner's engine is busy with it, end the owner, and return what the
    call gave (or raised): meanwhile this process took the index over (`Served.make`)."""
    remote = served.remote()
    served.stands[0].block = True
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call(remote))
        except SharingError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    assert served.stands[0].started.wait(30)
    served.owner.close()
    thread.join(30)
    assert len(served.stands) == 2  # the caller took the index over
    assert remote.owner_pid == os.getpid()
    remote.close()
    return outcome[0]


def test_a_read_cut_short_by_the_owners_end_is_made_again(served: Served) -> None:
    assert _owner_ends_during(served, lambda remote: remote.sizes("abcd")) == {"documents": 4}


def test_a_delete_cut_short_by_the_owners_end_is_reported_not_repeated(served: Served) -> None:
    outcome = _owner_ends_during(served, lambda remote: remote.delete_documents("c", ["d"]))
    assert isinstance(outcome, SharingError)
    assert "may or may not have happened" in str(outcome)


def _answered(call: Callable[[], object]) -> list[object]:
    """What `call` gave, or [] while it is still waiting (it may never return: it runs aside)."""
    outcome: list[object] = []
    thread = threading.Thread(target=lambda: outcome.append(call()), daemon=True)
    thread.start()
    thread.join(30)
    return outcome


def test_a_caller_that_connects_and_says_nothing_does_not_hold_up_the_others(served: Served) -> None:
    # A process stopped (Ctrl-Z) or hung between its connect and its handshake.
    with socket.socket(socket.AF_UNIX) as silent:
        silent.connect(served.place.socket)
        assert _answered(lambda: served.remote().sizes("abcd")) == [{"documents": 4}]


def test_a_connection_that_fails_its_checks_does_not_end_the_serving(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = owner_module._same_user
    failures = [OSError(errno.EMFILE, "Too many open files")]

    def same_user(conn: Any) -> bool:
        if failures:  # the process ran out of descriptors for a moment
            raise failures.pop()
        return real(conn)

    monkeypatch.setattr(owner_module, "_same_user", same_user)
    with (
        contextlib.suppress(EOFError, OSError),
        Client(served.place.socket, family="AF_UNIX", authkey=read_key(served.place)),
    ):
        pass
    assert not failures
    assert _answered(lambda: served.remote().sizes("abcd")) == [{"documents": 4}]


def test_a_message_that_is_not_json_is_a_malformed_request(served: Served) -> None:
    for header in (b"\xff\x00not json", b"[" * 100_000):
        conn = Client(served.place.socket, family="AF_UNIX", authkey=read_key(served.place))
        with conn:
            conn.send_bytes(header)
            assert "malformed message" in receive(conn)["error"]["message"]


def _until(condition: Callable[[], bool]) -> None:
    """Wait (at most 30 s: a loaded machine) for what the owner's threads do on their own."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "the owner did not get there"
        time.sleep(0.01)


def _serving_threads() -> int:
    return sum(thread.name == "cuerag-share-call" for thread in threading.enumerate())


def test_callers_over_the_bound_are_told_the_owner_is_busy_and_get_no_thread(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(owner_module, "_HANDSHAKE_S", 60)  # the silent callers hold their calls throughout
    bound = owner_module._MAX_CALLS
    remote = served.remote()
    with contextlib.ExitStack() as stack:
        # A runaway caller: three times the bound of connections that never say a word.
        for _ in range(3 * bound):
            silent = stack.enter_context(socket.socket(socket.AF_UNIX))
            silent.connect(served.place.socket)
        _until(lambda: len(served.owner._calls) == bound)
        with pytest.raises(OwnerBusy) as busy:
            remote.sizes("abcd")
        assert f"the process serving this index (pid {os.getpid()}) is busy: {bound} calls in progress" in str(
            busy.value
        )
        assert (busy.value.pid, busy.value.calls) == (os.getpid(), bound)  # its fields cross too
        assert _serving_threads() == bound
    # The runaway caller gone, the others are served again.
    _until(lambda: not served.owner._calls)
    assert _answered(lambda: remote.sizes("abcd")) == [{"documents": 4}]


def test_a_caller_that_stops_before_its_request_is_whole_is_hung_up(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Authenticated, then nothing (a caller stopped or hung there): its call is not held for ever.
    monkeypatch.setattr(owner_module, "_HANDSHAKE_S", 1)
    digests = settings_digests(served.settings)
    for request in ([], [json.dumps({"op": "sizes", "settings": digests}).encode()]):
        conn = Client(served.place.socket, family="AF_UNIX", authkey=read_key(served.place))
        with conn:
            for message in request:
                conn.send_bytes(message)
            assert conn.poll(30), "the owner still holds the call"
            with pytest.raises(EOFError):
                conn.recv_bytes()
        _until(lambda: not served.owner._calls)
