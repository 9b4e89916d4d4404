"""The real `cuerag-mcp` server as a subprocess over stdio: index the sample corpus, ask the toy
question, and check that the server's stdout carries nothing but protocol messages (its logs go to
stderr)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLE_CORPUS, server_env
from mcp import Client, StdioServerParameters, stdio_client
from mounts import read_only_view

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).parent.parent.parent
PYTHON = sys.executable
TOY = "When did the 1979-80 European Cup winner win the FA Cup?"


async def test_stdio_index_and_q_iter(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=PYTHON,
        args=["-m", "server.main", "--data-dir", str(tmp_path / "data"), "--allowed-root", str(SAMPLE_CORPUS.parent)],
        cwd=str(ROOT),
        env=server_env(),
    )
    transport_errors: list[Exception] = []

    async def on_message(message: Any) -> None:
        # A line on stdout that is not a JSON-RPC message reaches the client as an Exception.
        if isinstance(message, Exception):
            transport_errors.append(message)

    stderr_path = tmp_path / "stderr.log"
    try:
        with stderr_path.open("w") as stderr:
            async with Client(stdio_client(params, errlog=stderr), message_handler=on_message) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert {"q_iter", "index_corpus", "delete_documents"} <= names
                progress: list[float] = []

                async def on_progress(p: float, total: float | None, message: str | None) -> None:
                    progress.append(p)

                indexed = await client.call_tool(
                    "index_corpus", {"corpus": "sample", "paths": [str(SAMPLE_CORPUS)]}, progress_callback=on_progress
                )
                assert not indexed.is_error, indexed.content[0].text  # type: ignore[union-attr]
                assert indexed.structured_content["documents_added"] == 15  # type: ignore[index]
                assert progress and progress[-1] == 100.0

                result = await client.call_tool("q_iter", {"corpus": "sample", "query": TOY})
                assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
                docs = [h["doc_id"] for h in result.structured_content["chunks"]]  # type: ignore[index]
                assert "nottingham-forest-fa-cup" in docs
                # Each hit's document is linked, and opens as a resource over the same transport.
                links = [c.uri for c in result.content if c.type == "resource_link"]
                assert links[0] == f"cuerag://sample/documents/{docs[0]}"
                opened = await client.read_resource(links[0])
                assert opened.contents[0].text.strip()  # type: ignore[union-attr]
                only = {"doc_ids": ["nottingham-forest-fa-cup"]}
                filtered = await client.call_tool("q_iter", {"corpus": "sample", "query": TOY, "filter": only})
                hits = filtered.structured_content["chunks"]  # type: ignore[index]
                assert [h["doc_id"] for h in hits] == ["nottingham-forest-fa-cup"]

                outside = await client.call_tool(
                    "index_corpus", {"corpus": "x", "paths": [str(ROOT / "pyproject.toml")]}
                )
                assert outside.is_error
                assert "outside the allowed roots" in outside.content[0].text  # type: ignore[union-attr]
    except BaseException:
        print(stderr_path.read_text()[-5000:])  # the server's side of the story, shown on failure
        raise

    assert transport_errors == []
    # The logs went to stderr (the lifespan logs when the engine is ready).
    assert "engine ready" in stderr_path.read_text()


# ---- issue 14, item 10: a read-only data directory -------------------------------------------------


@pytest.fixture
def read_only_data(tmp_path: Path) -> Iterator[Path]:
    """A data directory holding the indexed sample corpus, seen through a read-only mount: nothing
    can write there, root included (chmod would not stop root)."""
    from cuerag import CueRag, Settings

    source = tmp_path / "data"
    engine = CueRag(Settings(data_dir=source))
    engine.index_paths("sample", [SAMPLE_CORPUS])
    engine.close()
    with read_only_view(source, tmp_path / "ro") as view:
        yield view


async def test_stdio_read_only_server_serves_a_read_only_directory(read_only_data: Path, tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=PYTHON,
        args=["-m", "server.main", "--read-only", "--data-dir", str(read_only_data)],
        cwd=str(ROOT),
        env=server_env(),
    )
    stderr_path = tmp_path / "stderr.log"
    try:
        with stderr_path.open("w") as stderr:
            async with Client(stdio_client(params, errlog=stderr)) as client:
                listed = await client.call_tool("list_corpora", {})
                assert not listed.is_error, listed.content[0].text  # type: ignore[union-attr]
                assert [c["name"] for c in listed.structured_content["corpora"]] == ["sample"]  # type: ignore[index]
                result = await client.call_tool("q_iter", {"corpus": "sample", "query": TOY})
                assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
                docs = [h["doc_id"] for h in result.structured_content["chunks"]]  # type: ignore[index]
                assert "nottingham-forest-fa-cup" in docs
    except BaseException:
        print(stderr_path.read_text()[-5000:])
        raise


def test_a_writable_server_on_a_read_only_directory_says_so_in_one_line(read_only_data: Path) -> None:
    proc = subprocess.run(
        [PYTHON, "-m", "server.main", "--data-dir", str(read_only_data)],
        cwd=ROOT,
        env=server_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "Read-only file system" in proc.stderr and "--read-only" in proc.stderr
    assert proc.stdout == ""


def test_cli_on_a_read_only_directory(read_only_data: Path) -> None:
    env = {**server_env(), "CUERAG_DATA_DIR": str(read_only_data)}
    cli = [PYTHON, "-m", "cuerag.cli.app"]
    refused = subprocess.run([*cli, "corpora"], env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 1
    said = " ".join(refused.stderr.split())  # rich wraps the message at the terminal's width
    assert "error: cannot write to the index at" in said and "(Read-only file system)" in said, said[-3000:]
    assert "Traceback" not in refused.stderr and "╭" not in refused.stderr  # no traceback panel
    served = subprocess.run(
        [*cli, "--read-only", "query", TOY, "--corpus", "sample", "--json"], env=env, capture_output=True, text=True
    )
    assert served.returncode == 0, served.stderr[-3000:]
    assert "nottingham-forest-fa-cup" in served.stdout
