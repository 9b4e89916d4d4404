"""Paths an MCP client sends: bounded before anything resolves them.

Resolving a path is work the client chooses: one of a million segments (a 2 MB request) took
minutes, quadratic in its segments, and ran on the event loop, so no other client was answered
meanwhile. So the schema bounds a path's length, the segment count and each name's bytes are
checked before the path reaches the filesystem, and the resolving runs on a worker thread. Linux
allows 4,096 bytes in a path and 255 in one name: nothing longer can name a real file.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from cuerag import InputError

MAX_PATH_CHARS = 4096
MAX_SEGMENTS = 1024
MAX_NAME_BYTES = 255


def bounded_path(path: str) -> str:
    """The path, or InputError when it could not name a file (too many segments, a name over
    255 bytes). The message shows the path's start only: a refused path is not logged whole."""
    segments = path.split("/")
    if len(segments) > MAX_SEGMENTS:
        raise InputError(f"path {_start(path)} has {len(segments):,} segments; at most {MAX_SEGMENTS:,} are accepted")
    for name in segments:
        size = len(name.encode("utf-8", "surrogateescape"))
        if size > MAX_NAME_BYTES:
            raise InputError(
                f"path {_start(path)} has a name of {size:,} bytes; a file or folder name holds at most "
                f"{MAX_NAME_BYTES} bytes"
            )
    return path


def _start(path: str) -> str:
    return repr(path) if len(path) <= 80 else repr(path[:60]) + f"… ({len(path):,} characters)"


def _checked(path: str) -> str:
    try:
        return bounded_path(path)
    except InputError as exc:  # pydantic reports a ValueError as the argument's error
        raise ValueError(str(exc)) from exc


# The length is in the schema (a client can see it, and the SDK refuses a longer string before the
# tool runs); segments and name bytes are checked by the validator, on the same refusal path.
ToolPath = Annotated[str, Field(max_length=MAX_PATH_CHARS), AfterValidator(_checked)]
