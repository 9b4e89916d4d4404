"""Which user a loopback client runs as, for an HTTP server without a token.

Loopback is not private to the user who started the server: every account on the machine can
connect to 127.0.0.1. Without a token, any of them could call the tools: read the documents,
index files from the allowed roots into a corpus and read them back, delete. On Linux the kernel's
socket table (/proc/net/tcp, tcp6) says which user owns each end of a TCP connection (the column
`ss -e` shows), so a server without a token admits only clients of its own user, and root's (who
can read the user's files anyway); anyone else is refused with 403 before the request's body is
read. A token admits whoever holds it, and turns this off. Where there is no such table (another
system), every local client is admitted, and the server says so once at start-up.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from pathlib import Path

import anyio
import anyio.to_thread
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)

_TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))


def _hex(host: str, port: int) -> list[str]:
    """The ways the socket table writes this address: each 32-bit word of the address in the
    machine's byte order, then the port, in upper-case hex. An IPv4 address appears in tcp6 too,
    mapped (::ffff:a.b.c.d), on a dual-stack socket."""
    forms: list[bytes] = []
    try:
        forms.append(socket.inet_pton(socket.AF_INET, host))
        forms.append(socket.inet_pton(socket.AF_INET6, f"::ffff:{host}"))
    except OSError:
        try:
            forms.append(socket.inet_pton(socket.AF_INET6, host.split("%")[0]))
        except OSError:
            return []
    words = [
        "".join(f"{int.from_bytes(raw[i : i + 4], sys.byteorder):08X}" for i in range(0, len(raw), 4)) for raw in forms
    ]
    return [f"{w}:{port:04X}" for w in words]


def socket_tables_readable() -> bool:
    return any(os.access(table, os.R_OK) for table in _TABLES)


def peer_uid(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """The uid that owns the client's end of the connection from `client` to `server`, from the
    kernel's socket table; None when no table lists it."""
    ends = {(c, s) for c in _hex(*client) for s in _hex(*server)}
    for table in _TABLES:
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            # sl local_address rem_address st tx:rx tr:when retrnsmt uid ...
            if len(fields) > 7 and (fields[1], fields[2]) in ends:
                return int(fields[7])
    return None


class ThisUserOnly:
    """Refuses HTTP requests from loopback clients of another user (403); see the module's doc."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self._uids = {os.getuid(), 0}
        self._tables = socket_tables_readable()  # none: nothing to tell users apart by (said at start-up)
        # Threads of its own: the worker threads the engine's calls run on may all be busy (40 long
        # searches), and a poll or a cancel must not wait behind them for its check.
        self._threads: anyio.CapacityLimiter | None = None  # made in the event loop, on first use

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The table is read off the event loop: the kernel writes it out whole for each read, about
        # 10 µs a socket of the machine (20 ms with 2,000).
        if scope["type"] == "http" and not await self._admitted(scope):
            response = JSONResponse(
                {
                    "error": "forbidden",
                    "detail": "this server admits only its own user's clients; "
                    "start it with a token (--token) to admit others",
                },
                status_code=403,
            )
            await response(scope, receive, send)
            return
        await self._app(scope, receive, send)

    async def _admitted(self, scope: Scope) -> bool:
        if self._threads is None:
            self._threads = anyio.CapacityLimiter(4)
        return await anyio.to_thread.run_sync(self._admits, scope, limiter=self._threads)

    def _admits(self, scope: Scope) -> bool:
        client, server = scope.get("client"), scope.get("server")
        if not client or not server:
            return True  # not a TCP connection (a Unix socket, a test transport): no table lists it
        uid = peer_uid((client[0], client[1]), (server[0], server[1]))
        if uid in self._uids or not self._tables:
            return True
        log.warning("refused %s:%s: a client of another user (uid %s) and no token set", client[0], client[1], uid)
        return False
