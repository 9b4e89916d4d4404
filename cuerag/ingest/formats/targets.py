"""Where a hyperlink points: a document of the same corpus (its id is its path relative to the
indexed root), or somewhere outside it (kept as metadata, never followed)."""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def resolve_target(target: str, source: str | None) -> str | None:
    """The id of the document a link points at, resolved relative to the linking file `source`
    (a POSIX path relative to the root), `#anchor` and `?query` stripped; None for a link to
    outside the corpus (a URL, a path above the root), to the page itself, or from an inline
    document (which has no place in a folder to resolve from)."""
    target = target.strip()
    if source is None or not target or _SCHEME.match(target) or target.startswith("//"):
        return None
    path = unquote(re.split(r"[#?]", target, maxsplit=1)[0])
    if not path:
        return None  # an in-page anchor
    joined = path.lstrip("/") if path.startswith("/") else posixpath.join(posixpath.dirname(source), path)
    normal = posixpath.normpath(joined)
    if normal in (".", "") or normal == ".." or normal.startswith("../"):
        return None
    return None if normal == source else normal
