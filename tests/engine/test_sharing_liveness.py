"""A process attached to an owner that stops answering (SIGSTOP, as Ctrl-Z or a debugger does):
its calls fail within a bound, naming the owner, instead of waiting for ever; a long call of a
running owner is still waited for; continued, the owner serves again. The owner is a stand-in in
a process of its own (tests/sharing_owner.py), stopped for real; the bounds are shortened here so
the test is quick, and every wait of the test itself is bounded, so it fails rather than hangs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from sharing_owner import served_elsewhere

from cuerag.config import Settings
from cuerag.engine.sharing import remote as remote_module
from cuerag.engine.sharing.place import place_of
from cuerag.engine.sharing.remote import RemoteEngine
from cuerag.errors import OwnerNotAnswering

_JOIN_S = 90.0  # "does not hang", on a loaded machine: the bounds under test are a second or two


class _Aside:
    """A call made on a thread of its own, so the test can stop the owner while it waits."""

    def __init__(self, call: Callable[[], object]) -> None:
        self._outcome: list[object] = []
        self._thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self._thread.start()

    def _run(self, call: Callable[[], object]) -> None:
        try:
            self._outcome.append(call())
        except Exception as exc:
            self._outcome.append(exc)

    def outcome(self) -> object:
        """What the call returned or raised; fails (rather than hangs) while it still waits."""
        self._thread.join(_JOIN_S)
        assert self._outcome, "the call still waits on the stopped owner"
        return self._outcome[0]


def _outcome(call: Callable[[], object]) -> object:
    return _Aside(call).outcome()


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote_module, "_ANSWER_S", 1.0)
    monkeypatch.setattr(remote_module, "_STOPPED_S", 1.0)


def _stopped_message(exc: object, pid: int) -> str:
    assert isinstance(exc, OwnerNotAnswering), exc
    assert exc.pid == pid
    text = str(exc)
    assert f"the process serving this index (pid {pid}) does not answer" in text
    assert f"it is stopped (Ctrl-Z, SIGSTOP or a debugger): continue it (`kill -CONT {pid}`" in text
    return text


@pytest.mark.usefixtures("quick")
def test_a_stopped_owner_fails_the_call_under_way_and_the_next_and_serves_again_when_continued(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    with served_elsewhere(settings.data_dir) as owner:
        remote = RemoteEngine(settings, place_of(settings.data_dir), standby=False)
        assert remote.owner_pid == owner.pid

        # A call under way when the owner stops: it sent its request, and waits for the answer.
        under_way = _Aside(lambda: remote.sizes("sleep 600"))
        assert owner.said() == "started"
        owner.stop()
        assert "stopped for 1 s" in _stopped_message(under_way.outcome(), owner.pid)

        # The next call: the owner takes the connection (the kernel does) but never answers it.
        assert "no handshake within 1 s" in _stopped_message(_outcome(lambda: remote.sizes("abc")), owner.pid)

        # Continued, it answers again (the stopped call's answer goes nowhere).
        owner.resume()
        assert _outcome(lambda: remote.sizes("abc")) == {"documents": 3}
        remote.close()


@pytest.mark.usefixtures("quick")
def test_a_long_call_of_a_running_owner_is_waited_for(tmp_path: Path) -> None:
    # Longer than every bound of the attached side: an owner that runs is never given up on.
    settings = Settings(data_dir=tmp_path / "data")
    with served_elsewhere(settings.data_dir) as owner:
        remote = RemoteEngine(settings, place_of(settings.data_dir), standby=False)
        assert _outcome(lambda: remote.sizes("sleep 3")) == {"documents": len("sleep 3")}
        assert owner.said() == "started"
        remote.close()
