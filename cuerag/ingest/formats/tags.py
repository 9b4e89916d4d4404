"""A document's tags: its front matter's `tags`, and in Markdown the inline `#tags` of its text.

Note-taking tools (Obsidian, Logseq, Bear) treat both as one set of tags of a note, so a filter by
tag sees both. An inline tag is `#` at the start of the text or after a blank, then letters,
digits, `_`, `-` and `/` (nested tags: `#project/alpha`), at least one of them a letter: `#123`
is an issue number and `#` inside a word or a URL (`page#anchor`) is no tag. Code (inline or
fenced) and headings are never read for tags: the extractor passes only running text here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

# The tag's characters, matched greedily with no alternatives: linear however long the run.
_INLINE_TAG = re.compile(r"(?<!\S)#([\w/-]+)")
MAX_INLINE_TAGS = 100  # a file of a thousand "#x" is text, not a note's tags: the first 100 new ones are kept


def tags_of(metadata: Mapping[str, Any]) -> list[str]:
    """A front matter's tags: a YAML list, or one string of tags separated by commas (or by
    spaces when it has no comma), as static-site generators accept them."""
    raw = metadata.get("tags")
    if isinstance(raw, str):
        parts = raw.split(",") if "," in raw else raw.split()
    elif isinstance(raw, list):
        parts = [str(t) for t in raw if isinstance(t, str | int | float)]
    else:
        return []
    return list(dict.fromkeys(t.strip() for t in parts if t.strip()))


def inline_tags(text: str) -> list[str]:
    """The `#tags` written in a run of text, in order, without the `#` (trailing `/` or `-` cut)."""
    found = (m.group(1).rstrip("/-") for m in _INLINE_TAG.finditer(text))
    return [t for t in found if any(c.isalpha() for c in t)]


def with_inline_tags(metadata: dict[str, Any], inline: Iterable[str]) -> dict[str, Any]:
    """The metadata with the inline tags added to its `tags` (as a list, front matter's first; a
    tag already there in another case is not added again); unchanged when there are none."""
    given = tags_of(metadata)
    seen = {t.casefold() for t in given}
    added: list[str] = []
    for tag in inline:
        if len(added) >= MAX_INLINE_TAGS:
            break
        if tag.casefold() not in seen:
            seen.add(tag.casefold())
            added.append(tag)
    return {**metadata, "tags": given + added} if added else metadata
