"""The real `cuerag-mcp` server over streamable HTTP with a bearer token, as a subprocess: the
token admits an MCP client; no token or a wrong one gets 401. And the server refuses to bind
beyond loopback without a token, in its settings and on its command line."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from conftest import server_env
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from server.config import ServerSettings

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).parent.parent
PYTHON = sys.executable
TOKEN = "s3cret"
STARTUP_SECONDS = 90.0
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("http")
    port = free_port()
    stderr_path = tmp / "stderr.log"
    with stderr_path.open("w") as stderr:
        proc = subprocess.Popen(
            [
                PYTHON,
                "-m",
                "server.main",
                "--transport",
                "http",
                "--port",
                str(port),
                "--token",
                TOKEN,
                "--data-dir",
                str(tmp / "data"),
            ],
            cwd=ROOT,
            env=server_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if proc.poll() is not None:
                pytest.fail(f"server exited with {proc.returncode}:\n{stderr_path.read_text()[-3000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"server did not listen within {STARTUP_SECONDS}s:\n{stderr_path.read_text()[-3000:]}")
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


async def test_token_admits_the_client(http_url: str) -> None:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http,
        Client(streamable_http_client(http_url, http_client=http)) as client,
    ):
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"q_iter", "list_corpora", "index_corpus", "delete_documents"} <= names
        result = await client.call_tool("list_corpora", {})
        assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
        assert result.structured_content == {"corpora": []}


@pytest.mark.parametrize("scheme", ["Bearer", "bearer"])
async def test_raw_post_with_the_token_passes_the_check(http_url: str, scheme: str) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        resp = await http.post(http_url, json=INITIALIZE, headers={**ACCEPT, "Authorization": f"{scheme} {TOKEN}"})
    assert resp.status_code == 200, resp.text


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", f"Basic {TOKEN}", TOKEN, "Bearer"],
)
async def test_missing_or_wrong_token_is_401(http_url: str, authorization: str | None) -> None:
    headers = dict(ACCEPT)
    if authorization is not None:
        headers["Authorization"] = authorization
    async with httpx2.AsyncClient(timeout=30) as http:
        resp = await http.post(http_url, json=INITIALIZE, headers=headers)
        assert resp.status_code == 401, resp.text
        assert resp.headers["www-authenticate"].startswith("Bearer")
        assert resp.json()["error"] == "unauthorized"
        get = await http.get(http_url, headers={k: v for k, v in headers.items() if k != "Content-Type"})
        assert get.status_code == 401


def test_settings_refuse_a_public_bind_without_token() -> None:
    with pytest.raises(ValueError, match="token"):
        ServerSettings(transport="http", host="0.0.0.0")
    with pytest.raises(ValueError, match="token"):
        ServerSettings(transport="http", host="192.168.1.10")
    assert ServerSettings(transport="http", host="0.0.0.0", token="t").token is not None
    assert ServerSettings(transport="http", host="127.0.0.1").token is None
    assert ServerSettings(transport="http", host="localhost").host == "localhost"
    assert ServerSettings(transport="stdio", host="0.0.0.0").transport == "stdio"


def test_cli_refuses_a_public_bind_without_token() -> None:
    proc = subprocess.run(
        [PYTHON, "-m", "server.main", "--transport", "http", "--host", "0.0.0.0"],
        cwd=ROOT,
        env=server_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert "token" in proc.stderr
    assert "0.0.0.0" in proc.stderr
    assert proc.stdout == ""
