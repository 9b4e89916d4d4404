"""The hostile-input sweep of issue 29, rerun as a whole against a real server.

    OMP_NUM_THREADS=1 PYTHONPATH=$PWD .venv/bin/python benchmarks/hostile_sweep.py \\
        [--many 20000] [--copies 30] [--small 2000] [--work /tmp/hostile]

Starts `cuerag-mcp --transport http` on loopback with the work folder as its allowed root, then
sends the issue's attacks one after another from one MCP client while a second client calls
list_corpora every 50 ms (ping is legacy in the 2026-07-28 protocol). For each attack it prints
the time the call took, the longest wait for that answer during it (how long the event loop was
blocked for everyone else) and the size of what came back (the
JSON of the structured result, or the error text). The attacks: the 25-character glob as an
exclude and as a `.gitignore` line; a 2 MB path; `[folder]*copies` of a folder of `many` small
files, cancelled after 2 s (the time until the job has stopped); a folder 1,000 levels deep; a
no-change sync of `small` files; `small` binary files; link_entities at its maxima. A disk that
fills is not simulated here (tests/server/test_hostile_inputs.py fills one).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

GLOB = "*?" * 12 + "!"  # 25 characters: backtracked exponentially by the old glob library
CITIES = "Oslo Bergen Paris London Tokyo Berlin Madrid Rome Vienna Prague Warsaw Lisbon Dublin Athens Cairo Lima"


def _server(work: Path, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUERAG_")}
    env |= {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(Path(__file__).parents[1])}
    args = ["--transport", "http", "--port", str(port), "--data-dir", str(work / "data")]
    args += ["--allowed-root", str(work / "root")]
    log = (work / "server.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "server.main", *args], env=env, stderr=log, stdout=log)
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited: {(work / 'server.log').read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return proc
        except OSError:
            time.sleep(0.3)


def _make(root: Path, many: int, small: int) -> dict[str, Path]:
    folders = {name: root / name for name in ("glob", "ignore", "many", "deep", "small", "binary")}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    for name in ("glob", "ignore"):
        (folders[name] / ("a" * 40 + ".md")).write_text("# A\n\nAda wrote a note.\n")
    (folders["ignore"] / ".gitignore").write_text(GLOB + "\n")
    for n in range(many):
        (folders["many"] / f"n{n}.md").write_text(f"# Note {n}\n\nTown {n} lies by the river.\n")
    deep = folders["deep"]
    for _ in range(1000):  # one level at a time: Path.mkdir(parents=True) recurses once per level
        deep = deep / "d"
        deep.mkdir(exist_ok=True)
    (deep / "bottom.md").write_text("# Bottom\n\nThe deepest note.\n")
    for n in range(small):
        (folders["small"] / f"s{n}.md").write_text(f"# Small {n}\n\n{CITIES.split()[n % 16]} has a harbour {n}.\n")
        (folders["binary"] / f"b{n}.md").write_bytes(os.urandom(256) + b"\x00" * 64)
    return folders


def _size(result: Any) -> int:
    if result.is_error:
        return len(result.content[0].text)
    return len(json.dumps(result.structured_content))


async def _sweep(url: str, folders: dict[str, Path], copies: int) -> None:
    waits: list[float] = []
    stop = anyio.Event()

    async def pinger() -> None:
        async with httpx2.AsyncClient(timeout=600) as http, Client(streamable_http_client(url, http_client=http)) as c:
            while not stop.is_set():
                t0 = time.perf_counter()
                await c.call_tool("list_corpora", {})
                waits.append(time.perf_counter() - t0)
                await anyio.sleep(0.05)

    async with (
        httpx2.AsyncClient(timeout=3600) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
        anyio.create_task_group() as group,
    ):
        group.start_soon(pinger)
        await anyio.sleep(1)

        async def attack(name: str, run: Callable[[], Awaitable[tuple[int, str]]]) -> None:
            waits.clear()
            t0 = time.perf_counter()
            size, note = await run()
            took = time.perf_counter() - t0
            longest = max(waits, default=float("nan"))
            print(
                f"{name:38} {took:8.2f} s  longest list_corpora {longest * 1000:8.1f} ms  {size:>8} chars  {note}",
                flush=True,
            )

        async def call(tool: str, **args: Any) -> tuple[int, str]:
            result = await client.call_tool(tool, args)
            return _size(result), "error" if result.is_error else "ok"

        await attack(
            "25-char glob (exclude)",
            lambda: call("index_corpus", corpus="g", paths=[str(folders["glob"])], exclude=[GLOB]),
        )
        await attack(
            "25-char glob (.gitignore line)", lambda: call("index_corpus", corpus="i", paths=[str(folders["ignore"])])
        )
        long_path = str(folders["glob"]) + "/" + "a/" * 1_000_000
        await attack("2 MB path", lambda: call("index_corpus", corpus="p", paths=[long_path]))

        async def cancelled() -> tuple[int, str]:
            paths = [str(folders["many"])] * copies
            job = await client.call_tool("index_corpus", {"corpus": "m", "paths": paths, "background": True})
            job_id = job.structured_content["job_id"]  # type: ignore[index]
            await anyio.sleep(2)
            await client.call_tool("cancel_job", {"job_id": job_id})
            asked = time.perf_counter()
            while True:
                status = await client.call_tool("job_status", {"job_id": job_id, "wait_s": 5})
                state = status.structured_content["state"]  # type: ignore[index]
                if state not in ("running", "cancelling", "queued"):
                    return _size(status), f"{state} {time.perf_counter() - asked:.1f} s after the cancel"

        await attack(f"{copies} x a folder of many files, cancelled", cancelled)
        await attack("1,000-deep folder", lambda: call("index_corpus", corpus="d", paths=[str(folders["deep"])]))
        await attack(
            "small files, first index", lambda: call("index_corpus", corpus="s", paths=[str(folders["small"])])
        )
        await attack(
            "small files, no-change sync",
            lambda: call("index_corpus", corpus="s", paths=[str(folders["small"])], sync=True),
        )
        await attack("binary files", lambda: call("index_corpus", corpus="b", paths=[str(folders["binary"])]))
        query = " ".join(f"{city} is a city." for city in (CITIES + " " + CITIES.lower().title()).split())
        await attack("link_entities at its maxima", lambda: call("link_entities", corpus="s", query=query, k=50))
        stop.set()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--many", type=int, default=20_000)
    parser.add_argument("--copies", type=int, default=30)
    parser.add_argument("--small", type=int, default=2_000)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="hostile-"))
    folders = _make(work / "root", args.many, args.small)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = _server(work, port)
    try:
        anyio.run(_sweep, f"http://127.0.0.1:{port}/mcp", folders, args.copies)
    finally:
        proc.terminate()
        proc.wait(60)


if __name__ == "__main__":
    main()
