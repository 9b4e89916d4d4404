"""The messages between a caller and the process serving the index: JSON objects, one per
`multiprocessing.connection` message (its framing and its HMAC handshake, never its pickling: a
message is data, validated on arrival, never code). Errors travel as their class name, message
and fields, and come back as the same `cuerag.errors` class, so front ends word them as before."""

from __future__ import annotations

import hashlib
import json
from multiprocessing.connection import Connection
from typing import Any

from pydantic_core import to_jsonable_python

from cuerag.config import Settings
from cuerag.errors import ArgumentProblem, CueRagError, InvalidArguments, NothingIndexed, SharingError

# The largest message read: a request of inline documents can be as large as an index request may
# read (`max_request_bytes`); this bounds what a caller can make the owner hold before validation.
MAX_MESSAGE = 2 * 1024 * 2**20


def send(conn: Connection, message: dict[str, Any]) -> None:
    conn.send_bytes(json.dumps(message, default=to_jsonable_python).encode())


def receive(conn: Connection) -> dict[str, Any]:
    try:
        message = json.loads(conn.recv_bytes(MAX_MESSAGE))
    except (ValueError, RecursionError):  # not JSON, not text, or nested past the parser's depth
        message = None
    if not isinstance(message, dict):
        raise SharingError("a malformed message came through the sharing socket")
    return message


def _error_classes(root: type[CueRagError] = CueRagError) -> dict[str, type[CueRagError]]:
    found = {root.__name__: root}
    for sub in root.__subclasses__():
        found.update(_error_classes(sub))
    return found


def error_message(exc: CueRagError) -> dict[str, Any]:
    return {"type": type(exc).__name__, "message": str(exc), "fields": to_jsonable_python(vars(exc), fallback=repr)}


def raised(payload: dict[str, Any]) -> CueRagError:
    """The error an `error_message` describes, as its own class (its fields restored) when that
    class is a known engine error, else a `SharingError` with its message."""
    message = str(payload.get("message", ""))
    cls = _error_classes().get(str(payload.get("type")))
    if cls is None:
        return SharingError(message)
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    fields = payload.get("fields")
    if isinstance(fields, dict):
        vars(exc).update(fields)
    if isinstance(exc, InvalidArguments):
        given: list[Any] = list(vars(exc).get("problems", []))
        exc.problems = [
            ArgumentProblem(**{**p, "allowed": tuple(p["allowed"]) if p.get("allowed") else None}) for p in given
        ]
    if isinstance(exc, NothingIndexed):
        exc.failed = [(str(path), str(reason)) for path, reason in exc.failed]
    return exc


# Settings that say where and how a process opens the index, not what the engine does: the same
# data directory is what brought the two processes together, and the sharing settings are each
# process's own.
_OWN_SETTINGS = frozenset({"data_dir", "read_only", "store", "qdrant_url", "qdrant_api_key", "share", "share_wait_s"})


def settings_digests(settings: Settings) -> dict[str, str]:
    """A digest of each setting that shapes the engine's work, compared by the owner with its own
    on every call: a caller with another embedder or LLM would otherwise get the owner's results
    without a word. Digests, so that no secret (an API key) is ever sent."""
    values = settings.model_dump(mode="json", exclude=set(_OWN_SETTINGS))
    for name in ("llm_api_key",):
        secret = getattr(settings, name)
        values[name] = secret.get_secret_value() if secret is not None else None
    return {
        name: hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]
        for name, value in values.items()
    }
