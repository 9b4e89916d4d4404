"""The real `cuerag-mcp` server over streamable HTTP with a bearer token, as a subprocess: the
token admits an MCP client; no token, an empty one or a wrong one gets 401. The server refuses to
bind beyond loopback without a token, and refuses an empty or short token, in its settings and on
its command line. On any loopback address (127.0.0.2 too) a foreign Host or Origin is refused
(DNS-rebinding protection)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest
from conftest import server_env
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from server.config import ServerSettings
from server.local_users import peer_uid, socket_tables_readable

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).parent.parent.parent
PYTHON = sys.executable
TOKEN = "s3cret-s3cret-s3cret"
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


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def running_server(tmp: Path, *args: str, host: str = "127.0.0.1", env: dict[str, str] | None = None) -> Iterator[str]:
    """A `cuerag-mcp --transport http` subprocess on `host`; yields its /mcp URL."""
    port = free_port(host)
    stderr_path = tmp / "stderr.log"
    with stderr_path.open("w") as stderr:
        proc = subprocess.Popen(
            [
                PYTHON,
                "-m",
                "server.main",
                "--transport",
                "http",
                "--host",
                host,
                "--port",
                str(port),
                "--data-dir",
                str(tmp / "data"),
                *args,
            ],
            cwd=ROOT,
            env={**server_env(), **(env or {})},
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
                socket.create_connection((host, port), 0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"server did not listen within {STARTUP_SECONDS}s:\n{stderr_path.read_text()[-3000:]}")
                time.sleep(0.2)
        yield f"http://{host}:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("http"), "--token", TOKEN) as url:
        yield url


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
    assert ServerSettings(transport="http", host="0.0.0.0", token=TOKEN).token is not None
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


# ---- issue 14, item 1: an empty token must not turn auth off -----------------------------------


@pytest.mark.parametrize("token", ["", " ", "\t\n", "short", " " + TOKEN])
def test_settings_refuse_an_empty_or_short_token(token: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="token"):
        ServerSettings(transport="http", host="0.0.0.0", token=token)
    with pytest.raises(ValueError, match="token"):
        ServerSettings(transport="http", token=token)  # on loopback too: the user meant one
    monkeypatch.setenv("CUERAG_MCP_TOKEN", token)  # `CUERAG_MCP_TOKEN=` set to nothing
    with pytest.raises(ValueError, match="token"):
        ServerSettings(transport="http", host="0.0.0.0")


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--token", ""], {}),  # `--token "$TOKEN"` with TOKEN unset
        (["--token", "   "], {}),
        ([], {"CUERAG_MCP_TOKEN": ""}),
    ],
)
def test_cli_refuses_an_empty_token(args: list[str], env: dict[str, str]) -> None:
    proc = subprocess.run(
        [PYTHON, "-m", "server.main", "--transport", "http", "--host", "0.0.0.0", *args],
        cwd=ROOT,
        env={**server_env(), **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "token is empty" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def raw_post(url: str, authorization: bytes) -> int:
    """POST initialize with an Authorization header sent byte for byte (httpx refuses a value
    with trailing spaces, which is exactly what a careless client sends); the status code."""
    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    body = json.dumps(INITIALIZE).encode()
    request = (
        b"POST /mcp HTTP/1.1\r\nHost: " + f"{host}:{port}".encode() + b"\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        b"Authorization: " + authorization + b"\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body
    )
    with socket.create_connection((host, int(port)), 30) as conn:
        conn.sendall(request)
        status_line = conn.makefile("rb").readline()
    return int(status_line.split()[1])


@pytest.mark.parametrize("authorization", [b"Bearer ", b"Bearer    ", b"bearer \t", b"Bearer"])
def test_bearer_with_nothing_after_it_is_401(http_url: str, authorization: bytes) -> None:
    assert raw_post(http_url, authorization) == 401
    assert raw_post(http_url, f"Bearer {TOKEN}".encode()) == 200  # the same request with the token


# ---- issue 14, item 5: DNS-rebinding protection on every loopback address ----------------------


@pytest.fixture(scope="module")
def loopback2_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server on 127.0.0.2 (loopback, so no token needed) admitting one extra browser origin."""
    tmp = tmp_path_factory.mktemp("loopback2")
    origins = {"CUERAG_MCP_ALLOWED_ORIGINS": '["https://app.example"]'}
    with running_server(tmp, host="127.0.0.2", env=origins) as url:
        yield url


async def _post(url: str, headers: dict[str, str], message: dict[str, object] = INITIALIZE) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(url, json=message, headers={**ACCEPT, **headers})


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "evil.example"},
        {"Host": "evil.example", "Origin": "http://evil.example"},
        {"Origin": "http://evil.example"},
        {"Origin": "http://127.0.0.2.evil.example"},
        {"Host": "127.0.0.2.evil.example:80"},
    ],
)
async def test_loopback_bind_refuses_a_foreign_host_or_origin(loopback2_url: str, headers: dict[str, str]) -> None:
    resp = await _post(loopback2_url, headers)
    assert resp.status_code in (400, 403, 421), (resp.status_code, resp.text)
    # Nothing past the check ran: a tool call is refused the same way.
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_corpora", "arguments": {}}}
    assert (await _post(loopback2_url, headers, call)).status_code in (400, 403, 421)


@pytest.mark.parametrize("origin", [None, "http://127.0.0.2:1234", "http://localhost:3000", "https://app.example"])
async def test_loopback_bind_admits_its_own_host_and_allowed_origins(loopback2_url: str, origin: str | None) -> None:
    headers = {} if origin is None else {"Origin": origin}
    resp = await _post(loopback2_url, headers)
    assert resp.status_code == 200, resp.text
    async with Client(streamable_http_client(loopback2_url)) as client:  # a real client, no token
        assert not (await client.call_tool("list_corpora", {})).is_error


@pytest.mark.parametrize("host", ["127.0.0.2", "127.1.2.3", "::1", "localhost", "127.0.0.1"])
def test_every_loopback_bind_checks_host_and_origin(host: str) -> None:
    from server.security import transport_security

    security = transport_security(ServerSettings(transport="http", host=host))
    assert security.enable_dns_rebinding_protection
    bound = f"[{host}]" if ":" in host else host
    assert f"{bound}:*" in security.allowed_hosts
    assert not any("evil" in h for h in [*security.allowed_hosts, *security.allowed_origins])


def test_public_bind_with_allowed_origins_checks_them() -> None:
    from server.security import transport_security

    security = transport_security(
        ServerSettings(transport="http", host="192.0.2.7", token=TOKEN, allowed_origins=["https://app.example"])
    )
    assert security.enable_dns_rebinding_protection
    assert security.allowed_origins == ["https://app.example"]
    assert "192.0.2.7:*" in security.allowed_hosts


def _request_head(url: str, length: int, extra: bytes = b"") -> bytes:
    host = url.split("/")[2]
    return (
        (
            f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n"
        ).encode()
        + extra
        + b"\r\n"
    )


def _trickle(url: str, first: bytes, drip: bytes) -> bytes:
    """Send `first`, then `drip` every 0.2 s until the server closes; what it answered."""
    host, port = url.split("/")[2].split(":")
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(first)
        for _ in range(600):  # two minutes at most: far past the server's 2 s
            try:
                sock.sendall(drip)
            except OSError:
                break
            time.sleep(0.2)
        else:
            pytest.fail("the server held a trickling request for two minutes")
        try:
            return sock.recv(4096)
        except OSError:
            return b""  # reset before the answer could be read


def test_a_trickled_body_or_header_is_cut_off_with_408_and_one_line(tmp_path: Path) -> None:
    """Slowloris: a request's headers and body must arrive within the server's deadline (here 2 s)."""
    with running_server(tmp_path, env={"CUERAG_MCP_REQUEST_TIMEOUT_S": "2"}) as url:
        body = json.dumps(INITIALIZE).encode()
        answered = _trickle(url, _request_head(url, 100_000) + body[:5], b" ")  # never whole
        assert answered == b"" or answered.startswith(b"HTTP/1.1 408"), answered
        _trickle(url, b"POST /mcp HTTP/1.1\r\n", b"X-Slow: 1\r\n")
        # The server still answers others at once.
        with httpx2.Client(timeout=30) as http:
            assert http.post(url, json=INITIALIZE, headers=ACCEPT).status_code == 200
    stderr = (tmp_path / "stderr.log").read_text()
    assert stderr.count("took over 2s to arrive") == 2, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]


def test_a_client_leaving_mid_request_is_one_line_without_traceback(tmp_path: Path) -> None:
    """Before: the SDK logged `Error handling POST request` with a ClientDisconnect traceback."""
    with running_server(tmp_path) as url:
        host, port = url.split("/")[2].split(":")
        body = json.dumps(INITIALIZE).encode()
        for sent in (body[:10], b""):  # mid-body, and right after the headers
            with socket.create_connection((host, int(port)), timeout=30) as sock:
                sock.sendall(_request_head(url, len(body)) + sent)
                time.sleep(0.5)
        with httpx2.Client(timeout=30) as http:  # served as before
            assert http.post(url, json=INITIALIZE, headers=ACCEPT).status_code == 200
    stderr = (tmp_path / "stderr.log").read_text()
    assert stderr.count("left before its POST /mcp request arrived whole") == 2, stderr[-3000:]
    assert "Traceback" not in stderr and "Error handling" not in stderr, stderr[-3000:]


def _send_until_answered(url: str, head: bytes, chunk: bytes, most: int) -> bytes:
    """Send `head`, then `chunk` again and again (at most `most` bytes), reading whenever the
    server has answered; what it answered (b"" if it only closed)."""
    host, port = url.split("/")[2].split(":")
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(head)
        sent = 0
        while sent < most:
            try:
                sock.sendall(chunk)
            except OSError:
                break
            sent += len(chunk)
            sock.setblocking(False)
            try:
                answer = sock.recv(4096)
            except BlockingIOError:
                answer = None
            except OSError:
                break
            finally:
                sock.setblocking(True)
            if answer is not None:
                return answer
        try:
            return sock.recv(4096)
        except OSError:
            return b""


@pytest.mark.parametrize("chunked", [False, True], ids=["declared", "chunked"])
def test_an_oversized_body_is_refused_with_413_before_it_is_read(tmp_path: Path, chunked: bool) -> None:
    """Before: WholeBodies read any body whole into memory before the SDK's 4 MiB limit ran, so
    one client on loopback (no token there) could make the server hold gigabytes. A body declared
    over the limit is refused on its headers; a chunked one once the limit is passed, with the
    rest never read. The server then answers others as before."""
    with running_server(tmp_path) as url:
        host = url.split("/")[2]
        framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {1 << 40}"
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\n{framing}\r\n\r\n"
        ).encode()
        block = b" " * (1 << 20)
        chunk = b"%x\r\n%s\r\n" % (len(block), block) if chunked else block
        # 64 MiB at most: far past the 4 MiB limit, and the server must answer long before.
        answered = _send_until_answered(url, head, chunk, 64 << 20)
        assert answered.startswith(b"HTTP/1.1 413"), answered[:200]
        with httpx2.Client(timeout=30) as http:
            assert http.post(url, json=INITIALIZE, headers=ACCEPT).status_code == 200
    stderr = (tmp_path / "stderr.log").read_text()
    assert "Traceback" not in stderr, stderr[-3000:]


def test_the_socket_table_names_the_user_of_a_loopback_client() -> None:
    """What a server without a token tells users apart by (server/local_users.py)."""
    if not socket_tables_readable():
        pytest.skip("no /proc/net/tcp on this system")
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        with socket.socket(family) as listening:
            try:
                listening.bind((host, 0))
            except OSError:
                continue  # no IPv6 loopback here
            listening.listen()
            with socket.socket(family) as client:
                client.connect(listening.getsockname()[:2])
                accepted, address = listening.accept()
                with accepted:
                    assert peer_uid(address[:2], accepted.getsockname()[:2]) == os.getuid()


def _status_as(url: str, user: int | None) -> str:
    """The status line the server answers an initialize with, sent through a socket made as
    `user` (the kernel records the effective user at the socket's creation; root may take another's
    for that moment), or as this process's own user."""
    host, port = url.split("/")[2].split(":")
    if user is not None:
        os.seteuid(user)
    try:
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    finally:
        if user is not None:
            os.seteuid(0)
    body = json.dumps(INITIALIZE).encode()
    with sock:
        sock.settimeout(30)
        sock.connect((host, int(port)))
        sock.sendall(_request_head(url, len(body)) + body)
        return sock.recv(4096).split(b"\r\n")[0].decode()


def test_without_a_token_a_client_of_another_user_is_refused(tmp_path: Path) -> None:
    """Before: loopback without a token admitted every account on the machine, so another user
    could read the corpora and index (then read back) files from the allowed roots. Now only this
    user's clients (and root's) are admitted; a token admits whoever holds it."""
    if os.getuid() != 0:
        pytest.skip("making a client of another user needs root")
    if not socket_tables_readable():
        pytest.skip("no /proc/net/tcp on this system")
    with running_server(tmp_path) as url:
        assert _status_as(url, None) == "HTTP/1.1 200 OK"
        assert _status_as(url, 65534) == "HTTP/1.1 403 Forbidden"
    assert "a client of another user (uid 65534) and no token set" in (tmp_path / "stderr.log").read_text()
    with running_server(tmp_path, "--token", TOKEN) as url:  # the token decides: no uid check
        assert _status_as(url, 65534) == "HTTP/1.1 401 Unauthorized"


def test_a_token_on_the_command_line_is_warned_about(tmp_path: Path) -> None:
    """Before: `--token` was taken without a word, though every user of the machine reads a
    process's command line (`ps`), and with it the token that admits them. The environment
    variable is not shown to them."""
    warning = "--token puts the token in this process's command line"
    with running_server(tmp_path, "--token", TOKEN):
        pass
    assert warning in (tmp_path / "stderr.log").read_text()
    with running_server(tmp_path, env={"CUERAG_MCP_TOKEN": TOKEN}):
        pass
    assert warning not in (tmp_path / "stderr.log").read_text()


def test_a_bad_setting_is_one_line_that_never_quotes_the_value(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a token one character short printed pydantic's whole text, the token in it
    (`input_value='…'`) and a link: the user's secret, on a terminal or in a client's log."""
    from server.main import main

    with pytest.raises(SystemExit) as stopped:
        main(["--transport", "http", "--token", "fifteen-secret!"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2
    assert "cuerag-mcp: token: the bearer token must be at least 16 characters" in err, err
    assert "fifteen-secret!" not in err and "pydantic" not in err and "input_value" not in err
