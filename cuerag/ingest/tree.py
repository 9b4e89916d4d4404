"""A folder tree walked top-down without recursion.

`os.walk` recurses once per level on Python 3.11 (it became iterative only in 3.12 and later): a
folder nested a thousand levels deep, which any user can make, raised RecursionError and stopped
the whole run. This walk keeps its own stack, so depth costs memory, not stack frames. Like
`os.walk` it does not enter symbolic links to folders (they are listed among `dirs`), lets the
caller prune `dirs` in place, and hands an unreadable folder to `onerror`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

Step = tuple[str, list[str], list[str]]


def walk_tree(
    top: str | os.PathLike[str],
    *,
    onerror: Callable[[OSError], None] | None = None,
    stop: Callable[[], None] | None = None,
) -> Iterator[Step]:
    """(folder, its sub-folder names, its other names) for `top` and every folder under it, each
    folder before those inside it. `stop` is called before each folder is read: it raises to end
    the walk (a cancelled request)."""
    pending = [os.fspath(top)]
    while pending:
        if stop is not None:
            stop()
        here = pending.pop()
        dirs: list[str] = []
        names: list[str] = []
        try:
            with os.scandir(here) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir()  # follows a link, as os.walk's listing does
                    except OSError:
                        is_dir = False
                    (dirs if is_dir else names).append(entry.name)
        except OSError as exc:
            if onerror is not None:
                onerror(exc)
            continue
        yield here, dirs, names
        # What the caller left in `dirs`, minus links (never entered), visited in order.
        for name in reversed(dirs):
            path = os.path.join(here, name)
            if not os.path.islink(path):
                pending.append(path)
