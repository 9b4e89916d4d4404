"""Reading a file once, safely: open it, check where the open descriptor really points, check its
size on the descriptor, then read only from that descriptor.

Checking a path and then reading it again by name leaves a window in which the file can be swapped
for a symlink to anything (a path race); here the caller's `check` sees the real path of the file
that is actually open, and nothing is read through the name again. Text checks (NUL bytes, UTF-8)
are streamed over the bytes, and an error never keeps the bytes it was raised over.
"""

from __future__ import annotations

import codecs
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from cuerag.errors import InputError, RequestTooLarge

if TYPE_CHECKING:
    from cuerag.config import Settings

Check = Callable[[Path], object]
"""Called with the real path of an open file before a byte of it is read; raises to refuse it."""

_READ_BLOCK = 1 << 20


class ReadLimits(BaseModel):
    """How much one file, one PDF and one archive may hold (Settings carries the defaults)."""

    max_file_bytes: int = Field(default=100 * 2**20, ge=1)
    max_pdf_pages: int = Field(default=2000, ge=1)
    max_expansion_ratio: float = Field(default=100.0, gt=1.0)


def limits_of(settings: Settings) -> ReadLimits:
    """The reading limits a configuration sets."""
    return ReadLimits(
        max_file_bytes=settings.max_file_bytes,
        max_pdf_pages=settings.max_pdf_pages,
        max_expansion_ratio=settings.max_expansion_ratio,
    )


class ByteBudget:
    """The bytes one request may read in all, across its files. Charged before a file is read, from
    the size of its open descriptor."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def charge(self, size: int, name: str) -> None:
        if self.used + size > self.limit:
            raise RequestTooLarge(
                f"{name}: reading it would take this request past {_mib(self.limit)} in all "
                f"({_mib(self.used)} read before it); index the files in smaller requests"
            )
        self.used += size


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n} bytes"


def _fd_path(fd: int, fallback: Path) -> Path:
    """The path the kernel gives for an open descriptor (symlinks and `..` already resolved)."""
    if sys.platform.startswith("linux"):
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    if sys.platform == "darwin":
        import fcntl

        buf = fcntl.fcntl(fd, 50, b"\0" * 1024)  # F_GETPATH
        return Path(buf.rstrip(b"\0").decode("utf-8", "surrogateescape"))
    return fallback.resolve()  # no descriptor path on this system: the best a name can do


def read_file_once(
    path: Path, *, limits: ReadLimits, check: Check | None = None, budget: ByteBudget | None = None
) -> bytes:
    """The bytes of a regular file, read from one descriptor after `check` has seen the real path
    of that descriptor and its size is within the limits."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)  # a FIFO must not block
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InputError(f"cannot open {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"not a regular file: {path}")
        if check is not None:
            real = _fd_path(fd, path)
            reason: str | None = None
            try:
                check(real)
            except InputError as exc:
                if real == Path(os.path.abspath(path)):
                    raise
                reason = str(exc)
            if reason is not None:  # name the file as it was found too: it may be a link to `real`
                raise InputError(f"{path} opens {real}: {reason}")
        size = info.st_size
        if size == 0:
            raise InputError(f"file is empty: {path}")
        if size > limits.max_file_bytes:
            raise InputError(
                f"file is {_mib(size)}, over the limit of {_mib(limits.max_file_bytes)} per file: {path}; "
                "split it or raise CUERAG_MAX_FILE_BYTES"
            )
        if budget is not None:
            budget.charge(size, str(path))
        parts: list[bytes] = []
        got = 0
        while got <= size:  # never more than the size seen, plus one block to notice growth
            block = os.read(fd, min(_READ_BLOCK, size - got + 1))
            if not block:
                break
            parts.append(block)
            got += len(block)
        if got > size:
            raise InputError(f"file grew while it was read: {path}")
        return b"".join(parts)
    finally:
        os.close(fd)


def decode_text(raw: bytes, where: object) -> str:
    """UTF-8 text (a BOM allowed), checked block by block: a NUL byte or an invalid sequence is
    refused with its byte offset, and the error keeps none of the bytes."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    parts: list[str] = []
    problem: str | None = None
    view = memoryview(raw)
    for start in range(0, len(raw), _READ_BLOCK):
        block = bytes(view[start : start + _READ_BLOCK])
        nul = block.find(b"\x00")
        if nul >= 0:
            problem = f"file looks binary (NUL bytes), not text: {where} (a NUL at byte {start + nul})"
            break
        try:
            parts.append(decoder.decode(block, final=start + _READ_BLOCK >= len(raw)))
        except UnicodeDecodeError as exc:
            problem = f"file is not valid UTF-8 (byte {start + exc.start}): {where}; convert it to UTF-8 first"
            break
    if problem is not None:
        # Raised outside the except block: no context chain holding a decode error and its bytes.
        raise InputError(problem)
    text = "".join(parts)
    if not text.strip():
        raise InputError(f"file holds only whitespace: {where}")
    return text
