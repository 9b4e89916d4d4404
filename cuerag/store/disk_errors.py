"""A full or unwritable disk under the store, told as such.

The store's engine reports an OS error inside its own message ("No space left on device (os
error 28)"), and Python raises OSError with an errno: either way the caller must learn the cause
and what to do (free space, remount), not a generic "could not write", and a run that stops for it
is a clean refusal like the free-space check's.
"""

from __future__ import annotations

import errno

from cuerag.errors import StorageFullError, StorageUnwritableError, StoreError

_FULL = (errno.ENOSPC, errno.EDQUOT)
_UNWRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)
_AGAIN = "Earlier data is intact; a rerun completes this run."


def disk_error(exc: BaseException, what: str) -> StoreError | None:
    """A StorageFullError or StorageUnwritableError for an exception caused by the disk, else None."""
    code = exc.errno if isinstance(exc, OSError) else None
    text = str(exc)
    if code in _FULL or "No space left on device" in text or "os error 28" in text or "Disk quota" in text:
        return StorageFullError(
            f"the embedded store could not {what}: the disk is full ({_first(text)}); free space on the data "
            f"directory's filesystem, then run it again. {_AGAIN}"
        )
    if code in _UNWRITABLE or "Read-only file system" in text or "os error 30" in text:
        return StorageUnwritableError(
            f"the embedded store could not {what}: the data directory cannot be written ({_first(text)}); make "
            f"it writable (remount the filesystem read-write), then run it again. {_AGAIN}"
        )
    return None


def _first(text: str) -> str:
    return text.splitlines()[0][:200] if text else "no detail"
