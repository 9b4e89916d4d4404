"""Many clients, one index (issue 31): two stdio servers started by two clients on one data
directory and the CLI beside them, as real processes. The first server holds the index and serves
it; the second and the CLI use it through the first; when the first is killed (SIGKILL) the second
takes its place, and nothing written is lost."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import call, server_env
from mcp import Client, StdioServerParameters, stdio_client

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).parent.parent.parent
PYTHON = sys.executable
SERVED = "using the index served by process"


def _docs(prefix: str, n: int) -> list[dict[str, str]]:
    return [
        {
            "id": f"{prefix}-{i}",
            "title": f"{prefix.title()} note {i}",
            "text": f"{prefix.title()} station {i} was built in {1900 + i} by the engineer Ada Byron {i}.",
        }
        for i in range(n)
    ]


def _server(data: Path) -> StdioServerParameters:
    return StdioServerParameters(
        # --stepwise: search_units too crosses the socket (a retriever's call made by the owner).
        command=PYTHON,
        args=["-m", "server.main", "--data-dir", str(data), "--stepwise"],
        cwd=str(ROOT),
        env=server_env(),
    )


def _cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "cuerag", "--data-dir", str(data), *args],
        cwd=str(ROOT),
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _holder(data: Path) -> int:
    """The pid the store's lock file names: the process holding the index."""
    return int((data / "qdrant-edge" / ".lock").read_text().split()[-1])


async def _doc_ids(client: Client, corpus: str) -> set[str]:
    page: dict[str, Any] = await call(client, "list_documents", corpus=corpus, limit=200)
    return {d["doc_id"] for d in page["documents"]}


async def test_two_servers_and_the_cli_share_one_index_and_survive_the_owner_killed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    logs = [(tmp_path / f"server{i}.log").open("w") for i in (1, 2)]
    try:
        async with Client(stdio_client(_server(data), errlog=logs[0])) as first:
            await call(first, "list_corpora")  # the first server's lifespan has run: it holds the index
            owner = _holder(data)
            async with Client(stdio_client(_server(data), errlog=logs[1])) as second:
                assert _holder(data) == owner  # the second attached: it took no lock

                # Writes from both servers at once, each to its corpus, and one to a shared corpus.
                async with anyio.create_task_group() as tg:
                    for client, corpus in ((first, "alpha"), (second, "beta")):
                        tg.start_soon(
                            functools.partial(call, client, "index_corpus", corpus=corpus, documents=_docs(corpus, 4))
                        )
                await call(second, "index_corpus", corpus="both", documents=_docs("second", 2))
                await call(first, "index_corpus", corpus="both", documents=_docs("first", 2))

                # Reads from all three.
                for client in (first, second):
                    for corpus in ("alpha", "beta"):
                        hits = (await call(client, "q_iter", corpus=corpus, query="Who built station 2?"))["chunks"]
                        assert hits and hits[0]["doc_id"].startswith(corpus)
                units = await call(second, "search_units", corpus="beta", query="station 3 engineer", k=2)
                assert units["units"]
                # The theme tools through the owner too (their results cross the socket).
                found = await call(second, "global_search", corpus="beta", query="What do these notes cover?")
                assert found["corpus"] == "beta"
                listing = await call(second, "themes", corpus="beta")
                assert listing["corpus"] == "beta"
                cli = _cli(data, "query", "Who built station 1?", "--corpus", "alpha", "--json")
                assert cli.returncode == 0, cli.stderr
                assert f"{SERVED} {owner}" in cli.stderr
                assert "loading the models in this process" not in cli.stderr
                cli = _cli(data, "index", str(ROOT / "cuerag" / "data" / "sample_corpus.json"), "--corpus", "sample")
                assert cli.returncode == 0, cli.stderr

                # The owner is killed while the others are attached.
                # (Its client is closed last, outside the second's: client contexts end in order.)
                os.kill(owner, signal.SIGKILL)

                # The second goes on: it took the index over, and every write is there.
                assert await _doc_ids(second, "alpha") == {f"alpha-{i}" for i in range(4)}
                assert await _doc_ids(second, "beta") == {f"beta-{i}" for i in range(4)}
                assert await _doc_ids(second, "both") == {"second-0", "second-1", "first-0", "first-1"}
                assert len(await _doc_ids(second, "sample")) == 15
                assert _holder(data) != owner
                await call(second, "index_corpus", corpus="alpha", documents=_docs("late", 1))
                hits = (await call(second, "q_iter", corpus="alpha", query="Who built station 0?"))["chunks"]
                assert hits
                cli = _cli(data, "query", "Who built station 0?", "--corpus", "alpha")
                assert cli.returncode == 0, cli.stderr
                assert f"{SERVED} {_holder(data)}" in cli.stderr
    except BaseException:
        for log in logs:
            log.flush()
            print(Path(log.name).read_text()[-3000:])
        raise
    finally:
        for log in logs:
            log.close()


def test_cli_alone_says_it_loads_the_models_itself(tmp_path: Path) -> None:
    data = tmp_path / "data"
    made = _cli(data, "index", str(ROOT / "cuerag" / "data" / "sample_corpus.json"), "--corpus", "sample")
    assert made.returncode == 0, made.stderr
    cli = _cli(data, "query", "Who won the FA Cup?", "--corpus", "sample")
    assert cli.returncode == 0, cli.stderr
    assert "loading the models in this process (no cuerag process serves this data directory)" in cli.stderr
    assert SERVED not in cli.stderr
