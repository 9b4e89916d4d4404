"""A caller that stops reading (Ctrl-Z on `cuerag index`, a debugger, a hung client) must not stall
the owner's run of its call, which holds the corpus's writer lock and so every other writer's
calls: its progress reports are dropped rather than waited on, and a file check it does not answer
stops the run as a cancelled one, within a bound. The connection is a real socket pair whose far
end never reads; every wait of the test is bounded, so it fails rather than hangs."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from cuerag.engine.sharing import owner as owner_module
from cuerag.engine.sharing.owner import _Peer
from cuerag.errors import Cancelled

_JOIN_S = 60.0  # "does not hang", on a loaded machine; the bound under test is shortened to 0.5 s


@pytest.fixture
def pair() -> Iterator[tuple[Connection, Connection]]:
    here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    for sock in (here, there):  # small buffers: a caller that reads nothing fills them at once
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    owner_end, caller_end = Connection(here.detach()), Connection(there.detach())
    yield owner_end, caller_end
    owner_end.close()
    caller_end.close()


def _finishes(call: Callable[[], object]) -> object:
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(_JOIN_S)
    assert outcome, "the owner's run still waits on a caller that reads nothing"
    return outcome[0]


def _drain(conn: Connection) -> list[dict[str, object]]:
    messages = []
    while conn.poll(0.2):
        messages.append(json.loads(conn.recv_bytes()))
    return messages


def test_progress_to_a_caller_that_reads_nothing_is_dropped_not_waited_on(pair: tuple[Connection, Connection]) -> None:
    owner_end, caller_end = pair
    peer = _Peer(owner_end, threading.Event())

    def report() -> int:
        for done in range(20_000):  # ~40 bytes each: far past any socket buffer
            peer.progress("embedding", done, 20_000)
        return done

    assert _finishes(report) == 19_999
    assert not peer.should_stop()  # a caller that only lags is not taken for gone
    # What reached the caller is whole messages in order (none cut by a dropped one), some missing.
    received = _drain(caller_end)
    dones = [m["progress"][1] for m in received]  # type: ignore[index]
    assert dones and dones == sorted(dones) and len(dones) < 20_000
    # Once the caller reads again, progress reaches it again.
    peer.progress("embedding", 20_000, 20_000)
    assert _drain(caller_end) == [{"progress": ["embedding", 20_000, 20_000]}]


def test_a_file_check_the_caller_does_not_answer_stops_the_run(
    pair: tuple[Connection, Connection], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(owner_module, "_CHECK_S", 0.5)
    owner_end, caller_end = pair
    peer = _Peer(owner_end, threading.Event())

    outcome = _finishes(lambda: peer.check(Path("/notes/a.md")))

    assert isinstance(outcome, Cancelled), outcome
    assert "did not answer a file check within 0.5 s" in str(outcome)
    assert peer.should_stop()  # the run stops at its next step, as a cancelled one does
    assert _drain(caller_end) == [{"ask": "check", "path": "/notes/a.md"}]


def test_a_file_check_the_caller_answers_goes_on(pair: tuple[Connection, Connection]) -> None:
    owner_end, caller_end = pair
    peer = _Peer(owner_end, threading.Event())

    def answer() -> None:
        assert json.loads(caller_end.recv_bytes()) == {"ask": "check", "path": "/notes/a.md"}
        caller_end.send_bytes(b'{"ok": true}')

    answering = threading.Thread(target=answer, daemon=True)
    answering.start()
    assert _finishes(lambda: peer.check(Path("/notes/a.md"))) == Path("/notes/a.md")
    answering.join(_JOIN_S)
