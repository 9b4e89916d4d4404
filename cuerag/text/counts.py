"""A count with its noun, agreeing in number ("1 chunk", "2 chunks"): one home for the CLI's
lines and the MCP tools' text, which both print counts."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """ "1 document", "2 documents"; `plural` where adding an s is wrong ("entity", "entities")."""
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"
