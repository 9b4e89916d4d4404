"""Bearer-token check for the HTTP transport, as a plain ASGI wrapper around the MCP app."""

from __future__ import annotations

import hmac

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send


class BearerTokenMiddleware:
    """Refuses HTTP requests without `Authorization: Bearer <token>` (401). Lifespan events pass
    through so the MCP session manager still starts."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token.strip():  # settings refuse it first; this is the last line of defence
            raise ValueError("an empty bearer token would admit anyone")
        self._app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            response = JSONResponse(
                {"error": "unauthorized", "detail": "send Authorization: Bearer <token>"},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="cuerag"'},
            )
            await response(scope, receive, send)
            return
        await self._app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        header = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, token = header.partition(b" ")
        token = token.strip()
        return scheme.lower() == b"bearer" and bool(token) and hmac.compare_digest(token, self._token)
