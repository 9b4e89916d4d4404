"""A STAND-IN for Anthropic's Messages API, for tests only: no Anthropic endpoint can be reached
from here. It speaks the real wire format: POST /v1/messages with the key in `x-api-key` or, as
the `anthropic` 2.x SDK sends it, `Authorization: Bearer`, and the `anthropic-version` header; a
`message` object with text content blocks and `usage`; errors as `{"type": "error", "error":
{...}}` with the API's status codes. The real `anthropic` client talks to it unchanged. What it
answers is scripted by the test."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Fail:
    """A scripted error answer: HTTP status and the API's error type."""

    status: int
    kind: str = "api_error"
    message: str = "scripted failure"


Script = Callable[[dict[str, Any]], "str | Fail"]
"""Maps a request body to the assistant's text, or to an error."""


@dataclass
class StandIn:
    script: Script
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def user_texts(self) -> list[str]:
        with self.lock:
            return [r["messages"][-1]["content"] for r in self.requests]


def _tokens(text: str) -> int:
    return max(1, len(text.split()))


def _handler(standin: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            return

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("request-id", "req_standin")
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, kind: str, message: str) -> None:
            self._send(status, {"type": "error", "error": {"type": kind, "message": message}})

        def do_POST(self) -> None:
            if self.path.split("?")[0] != "/v1/messages":
                self._error(404, "not_found_error", f"no route {self.path}")
                return
            bearer = self.headers.get("authorization", "").removeprefix("Bearer ").strip()
            if not (self.headers.get("x-api-key") or bearer):
                self._error(401, "authentication_error", "x-api-key header is required")
                return
            if not self.headers.get("anthropic-version"):
                self._error(400, "invalid_request_error", "anthropic-version header is required")
                return
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
            for key in ("model", "max_tokens", "messages"):
                if key not in body:
                    self._error(400, "invalid_request_error", f"{key}: Field required")
                    return
            with standin.lock:
                standin.requests.append(body)
            outcome = standin.script(body)
            if isinstance(outcome, Fail):
                self._error(outcome.status, outcome.kind, outcome.message)
                return
            prompt = (body.get("system") or "") + " " + body["messages"][-1]["content"]
            # As the API does, stop at max_tokens (a "token" here is a word) and say so.
            words = outcome.split(" ")
            stop_reason = "end_turn"
            if len(words) > body["max_tokens"]:
                outcome, stop_reason = " ".join(words[: body["max_tokens"]]), "max_tokens"
            self._send(
                200,
                {
                    "id": f"msg_standin_{len(standin.requests)}",
                    "type": "message",
                    "role": "assistant",
                    "model": body["model"],
                    "content": [{"type": "text", "text": outcome}],
                    "stop_reason": stop_reason,
                    "stop_sequence": None,
                    "usage": {"input_tokens": _tokens(prompt), "output_tokens": _tokens(outcome)},
                },
            )

    return Handler


@contextmanager
def anthropic_standin(script: Script) -> Iterator[StandIn]:
    """Serve the stand-in on a free loopback port for the duration of the block."""
    standin = StandIn(script=script)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(standin))
    standin.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()
