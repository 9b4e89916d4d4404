"""Where the process serving a data directory listens, and the key that proves a caller runs as
the same user.

Both live in a folder only this user can enter: `$XDG_RUNTIME_DIR/cuerag`, else
`<tmp>/cuerag-<uid>`, created mode 0700 and checked on every use (a folder of another owner, a
symlink or a looser mode is refused rather than trusted). The temporary folder is shared by every
user, so another user can create `cuerag-<uid>` first and deny sharing: a folder found that way is
passed over for one under the user's own cache folder (`~/.cache/cuerag-run`), which nobody else
can create; every process of the user passes over the same folders, so all agree on one. A folder
under one that another user may write to (no sticky bit) is passed over too: they could swap ours
for theirs after the check.

In the folder, named by a hash of the data directory's real path (a socket path holds about 108
bytes, a data directory's path may not): the socket, and a key file (0600) of 32 random bytes
that `multiprocessing.connection` uses to authenticate both ends (HMAC challenge) before any
request is read.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cuerag.errors import SharingError

_KEY_BYTES = 32


@dataclass(frozen=True)
class Place:
    data_dir: Path  # the real path, as hashed
    socket: str
    key_file: Path


def _candidates() -> list[Path]:
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base:  # a per-user folder the system made: nobody else can have made ours in it
        return [Path(base) / "cuerag"]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return [Path(tempfile.gettempdir()) / f"cuerag-{os.getuid()}", cache / "cuerag-run"]


def _private(folder: Path) -> bool:
    """The folder, made if missing, is this user's own directory that nobody else can enter, in
    folders nobody else can rename it out of."""
    try:
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700, parents=folder.name == "cuerag-run")
        info = os.lstat(folder)
    except OSError:  # cannot be made or read (a read-only temporary folder, say)
        return False
    if not (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077):
        return False
    return _held_above(folder)


def _held_above(folder: Path) -> bool:
    """Every folder above `folder`, as named and where its links lead, is root's or this user's and
    none another user may write to, unless sticky (/tmp): whoever may write to a folder may rename
    our private folder out of it after the check and put theirs in its place (XDG_CACHE_HOME in a
    shared folder, or ~/.cache a link into a /tmp folder someone else made), then sit between the
    processes that share through it."""
    try:
        above = {*folder.parents, *folder.resolve().parents}
        infos = [os.stat(p) for p in above]
    except (OSError, RuntimeError):
        return False
    uid, gid = os.getuid(), os.getgid()
    for info in infos:
        if info.st_uid not in (0, uid):
            return False
        others_write = info.st_mode & 0o002 or (info.st_mode & 0o020 and info.st_gid != gid)
        if others_write and not info.st_mode & stat.S_ISVTX:
            return False
    return True


def runtime_dir() -> Path:
    candidates = _candidates()
    for folder in candidates:
        if _private(folder):
            return folder
    raise SharingError(
        f"{' and '.join(map(str, candidates))} are not private folders of this user (owner, type or mode): "
        "the index is not shared through them; remove them, or turn sharing off (CUERAG_SHARE=false)"
    )


def place_of(data_dir: Path) -> Place:
    real = data_dir.expanduser().resolve()
    name = hashlib.sha256(str(real).encode()).hexdigest()[:20]
    folder = runtime_dir()
    return Place(data_dir=real, socket=str(folder / f"{name}.sock"), key_file=folder / f"{name}.key")


def read_key(place: Place) -> bytes:
    """The data directory's key, made on first use. Written whole under a temporary name and
    linked into place, so a reader never sees a partial key and two makers agree on one."""
    try:
        return _checked_key(place.key_file)
    except FileNotFoundError:
        pass
    fd, temp = tempfile.mkstemp(dir=place.key_file.parent, prefix=".key-")  # mode 0600
    try:
        os.write(fd, secrets.token_bytes(_KEY_BYTES))
        os.close(fd)
        with contextlib.suppress(FileExistsError):  # another process made it first: theirs stands
            os.link(temp, place.key_file)
    finally:
        os.unlink(temp)
    return _checked_key(place.key_file)


def _checked_key(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise SharingError(f"the key file {path} is not private to this user: remove it")
        key = os.read(fd, _KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != _KEY_BYTES:
        raise SharingError(f"the key file {path} is damaged: remove it")
    return key
