"""Free space on the data directory's filesystem, checked before and during a write.

The embedded store writes through memory-mapped files: when the disk fills under it, the kernel
kills the whole process with SIGBUS (every MCP session drops, with no message). So a write is
refused, with what it needs, while there is still room: before it starts, and again before each
batch, since other programs use the same disk.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cuerag.errors import StorageFullError, StorageUnwritableError
from cuerag.store.base import StoredPoint

FreeBytes = Callable[[Path], int]
"""How many bytes the filesystem holding a path has free (the seam tests replace)."""

# The store keeps each point twice on disk (its write-ahead log and its segment), plus indexes;
# measured on qdrant-edge at about 2.2 times a point's vector and payload bytes.
_OVERHEAD = 3
_PER_COLLECTION = 1 << 20  # a new collection's config, WAL and segment headers

MB = 1 << 20


def disk_free(path: Path) -> int:
    """Free bytes for an unprivileged writer on the filesystem holding `path` (or its nearest
    existing parent). A filesystem mounted read-only (as `errors=remount-ro` does after a disk
    error) raises StorageUnwritableError: the store's next write through its memory map would
    kill the process with SIGBUS, with no log line."""
    while not path.exists() and path.parent != path:
        path = path.parent
    info = os.statvfs(path)
    if info.f_flag & os.ST_RDONLY:
        raise StorageUnwritableError(
            f"the filesystem of {path} is mounted read-only, so the index cannot be written; remount it "
            "read-write (or free the disk error that made it read-only), then run it again. Earlier data is "
            "intact; a rerun completes this run."
        )
    return info.f_bavail * info.f_frsize


def estimated_bytes(points: Sequence[StoredPoint]) -> int:
    """What writing these points takes on disk, rounded up generously."""
    raw = 0
    for p in points:
        vector = 0 if p.vector is None else 4 * len(p.vector)
        raw += vector + len(json.dumps(p.payload, ensure_ascii=False).encode()) + 64
    return _OVERHEAD * raw


@dataclass(frozen=True)
class SpaceGuard:
    """Refuses a write that would leave less than `margin_bytes` free under `path`."""

    path: Path
    margin_bytes: int
    free_bytes: FreeBytes = disk_free

    def require(self, needed: int, what: str) -> None:
        free = self.free_bytes(self.path)
        if free - needed >= self.margin_bytes:
            return
        short = needed + self.margin_bytes - free
        raise StorageFullError(
            f"not enough free disk space for {what}: it needs about {_mb(needed)} MB and "
            f"{_mb(self.margin_bytes)} MB must stay free (CUERAG_MIN_FREE_MB), but the filesystem of "
            f"{self.path} has {_mb(free)} MB free; free at least {_mb(short)} MB there (or lower "
            "CUERAG_MIN_FREE_MB), then run it again. Earlier data is intact; a rerun completes this run."
        )

    def require_collections(self, count: int, what: str) -> None:
        self.require(count * _PER_COLLECTION, what)


def _mb(n: int) -> str:
    return f"{max(n, 0) / MB:,.1f}"
