"""Reading a request off the network: a deadline for its headers and body, and a client that
leaves mid-body said in one line.

uvicorn bounds the wait between requests on a kept-alive connection, not the time a request takes
to arrive: a client that trickles its headers or its body a byte a second (slowloris) holds a
connection and a task for as long as it likes, and enough of them hold them all. `TimedH11Protocol`
gives each request `read_timeout_s` from its first byte (or the connection's opening) to its last,
then answers 408 and closes. `WholeBodies` reads a request's body before the MCP app sees it: the
SDK logs a client gone mid-body (a closed tab, a killed client, the 408 above) as an error with
its traceback, where it is an ordinary event worth one line. It keeps the SDK's bound on a body
(4 MiB), which it runs ahead of: a body declared longer is refused on its headers, one sent in
chunks as soon as it passes the bound, with 413 either way, so no client makes the server hold more.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any, cast

import h11
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

_TIMEOUT_RESPONSE = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
# The client's side is complete (or over) in these states: nothing more to wait for.
_READ = (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR)


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's arrival (headers and body)."""

    def __init__(self, *args: Any, read_timeout_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_timeout_s = read_timeout_s
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and self.conn.their_state is h11.IDLE:
            self._arm()  # the next request on a kept-alive connection begins
        super().data_received(data)
        if self.conn.their_state in _READ:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self._read_timeout_s, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self.conn.their_state in _READ:
            return
        log.warning("closed %s: its request took over %gs to arrive", _who(self.client), self._read_timeout_s)
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_TIMEOUT_RESPONSE)
        self.transport.close()


def _who(client: Any) -> str:
    return f"{client[0]}:{client[1]}" if client else "a client"


def timed_h11(read_timeout_s: float) -> type[asyncio.Protocol]:
    """The protocol class uvicorn instantiates per connection, with this deadline."""
    return cast(type[asyncio.Protocol], functools.partial(TimedH11Protocol, read_timeout_s=read_timeout_s))


class WholeBodies:
    """Reads each HTTP request's body in full before the app runs, up to `max_bytes` (413 past
    it); a client that leaves first is logged in one line and the app never sees the request."""

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> None:
        self._app = app
        self._max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_bytes:
            await self._too_large(scope, receive, send)
            return
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                who = _who(scope.get("client"))
                log.info("%s left before its %s %s request arrived whole", who, scope["method"], scope["path"])
                return
            part = message.get("body", b"")
            size += len(part)
            if size > self._max_bytes:
                await self._too_large(scope, receive, send)
                return
            parts.append(part)
            if not message.get("more_body", False):
                break
        body: list[Message] = [{"type": "http.request", "body": b"".join(parts), "more_body": False}]

        async def replay() -> Message:
            # The body once, then whatever comes next (a disconnect while the app answers).
            return body.pop() if body else await receive()

        await self._app(scope, replay, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        log.info(
            "refused %s's %s %s: its body is over %d bytes",
            _who(scope.get("client")),
            scope["method"],
            scope["path"],
            self._max_bytes,
        )
        # `connection: close`: the rest of the body is never read, so the connection cannot carry
        # another request.
        response = Response("request body too large", status_code=413, headers={"connection": "close"})
        await response(scope, receive, send)
