"""Real small filesystems for the failure tests: a tmpfs of a chosen size (a disk that fills up)
and a read-only bind mount (a data directory nothing can write to, root included). Mounting needs
root (CAP_SYS_ADMIN), which the development machine and CI have; elsewhere the tests that need it
skip and say why."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _mount(*args: str) -> None:
    proc = subprocess.run(["mount", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount here (needs root with CAP_SYS_ADMIN): {proc.stderr.strip()}")


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


@contextmanager
def tmpfs(path: Path, *, size_mb: int) -> Iterator[Path]:
    """A fresh tmpfs of `size_mb` MB at `path`."""
    path.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path))
    try:
        yield path
    finally:
        _umount(path)


@contextmanager
def read_only_view(source: Path, path: Path) -> Iterator[Path]:
    """`source` seen read-only at `path` (a bind mount remounted read-only)."""
    path.mkdir(parents=True, exist_ok=True)
    _mount("--bind", str(source), str(path))
    try:
        _mount("-o", "remount,bind,ro", str(path))
        probe = path / ".probe"
        try:
            probe.touch()
        except OSError:
            pass
        else:
            probe.unlink()
            pytest.skip("the read-only bind mount still accepts writes here")
        yield path
    finally:
        _umount(path)


def fill(path: Path, *, leave_mb: float) -> None:
    """Write a ballast file so that about `leave_mb` MB stay free on `path`'s filesystem."""
    import shutil

    free = shutil.disk_usage(path).free
    ballast = int(free - leave_mb * (1 << 20))
    if ballast > 0:
        with (path / "ballast.bin").open("wb") as f:
            f.write(b"\0" * ballast)
