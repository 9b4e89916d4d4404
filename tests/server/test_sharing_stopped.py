"""The process serving a data directory is stopped (SIGSTOP: Ctrl-Z in its terminal, a debugger):
a `cuerag query` and an MCP server's tool call beside it fail within a bound with an error that
names it and says how to continue it, instead of waiting for ever. The owner is a stand-in in a
process of its own (tests/sharing_owner.py); every wait of the test itself is bounded."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest
from conftest import call_error, server_env
from mcp import Client
from sharing_owner import ROOT, served_elsewhere

from cuerag.config import Settings
from cuerag.engine.sharing import open_engine
from cuerag.engine.sharing import remote as remote_module
from server.app import build_server
from server.config import ServerSettings


def _said(pid: int, text: str) -> None:
    flat = " ".join(text.split())  # rich wraps lines to its width
    assert f"the process serving this index (pid {pid}) does not answer" in flat, text
    assert f"`kill -CONT {pid}`" in flat, text


def test_a_cli_query_beside_a_stopped_owner_says_so_and_exits(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with served_elsewhere(data) as owner:
        owner.stop()
        run = subprocess.run(
            [sys.executable, "-m", "cuerag", "--data-dir", str(data), "query", "Who?", "--corpus", "c"],
            cwd=ROOT,
            env=server_env(),
            capture_output=True,
            text=True,
            timeout=300,  # the bound under test is 5 s; this one only keeps the test from hanging
        )
        assert run.returncode == 1, run.stderr
        _said(owner.pid, run.stderr)
        assert "no handshake within 5 s" in run.stderr


def test_an_mcp_tool_call_through_a_stopped_owner_is_a_tool_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote_module, "_ANSWER_S", 1.0)
    data = tmp_path / "data"
    errors: list[str] = []

    async def session(stop: object) -> None:
        # An attached server (it started while the owner ran), whose owner then stops.
        server = build_server(
            Settings(data_dir=data), ServerSettings(), engine_factory=lambda s: open_engine(s, standby=False)
        )
        async with Client(server) as client:
            assert callable(stop)
            stop()
            errors.append(await call_error(client, "q_iter", corpus="c", query="Who?"))

    with served_elsewhere(data) as owner:
        # In a thread of its own, joined with a bound: an engine call waiting for ever on the owner
        # would hold the event loop's worker thread, and the test, beyond any cancellation.
        thread = threading.Thread(target=anyio.run, args=(session, owner.stop), daemon=True)
        thread.start()
        thread.join(120)
        assert errors, "the tool call still waits on the stopped owner"
        _said(owner.pid, errors[0])
