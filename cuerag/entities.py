"""Entity identity: a normalised name decides which mentions are the same node."""

from __future__ import annotations

import re
import unicodedata

_POSSESSIVE = re.compile(r"(?:'s|’s|'|’)(?=\s|$)", re.IGNORECASE)
_NON_WORD = re.compile(r"[^\w\s]")
_WS = re.compile(r"\s+")
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an)\s+")


def fold_accents(text: str) -> str:
    """The text with accents dropped: "Aschenbrödel" -> "Aschenbrodel"."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def normalize_entity(name: str) -> str:
    """The identity of an entity mention: case-folded, accents and punctuation dropped, a
    possessive 's and a leading article removed, so "Lothair II's" and "lothair ii" match and
    "The European Cup" matches "European Cup". Hyphens and dots become spaces ("1979-80" ->
    "1979 80"), so spelling variants of a range or an initialism meet too."""
    text = _POSSESSIVE.sub("", fold_accents(name).casefold())
    text = _NON_WORD.sub(" ", text)
    text = _WS.sub(" ", text).strip()
    return _LEADING_ARTICLE.sub("", text)
