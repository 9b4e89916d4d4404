"""Entity identity: a normalised name decides which mentions are the same node."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

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


def same_entity(a: str, b: str) -> bool:
    """Whether two names are one entity's (`normalize_entity`): "The Orvane Institute" and
    "Orvane Institute's" are."""
    return normalize_entity(a) == normalize_entity(b)


def _not_of_a_name(token: Any) -> bool:
    """A token that ends an entity span without being part of the name: punctuation, or a
    function word written in lower case ("for" in "Corvane Labs for"). Both come from the NER
    model's own lexical attributes; a capitalised function word stays ("Let It Be")."""
    return bool(token.is_punct or (token.is_stop and token.is_lower))


def name_span(span: Any) -> Any:
    """An NER span (spaCy's `Span`) without the tokens at its edges that are not part of the
    name: trailing punctuation and lower-case function words, leading punctuation. The model
    sometimes runs a span into the next word ("Corvane Labs for"), and the unit then links to an
    entity no other mention of the name meets. At least one token is kept."""
    start, end = 0, len(span)
    while end - start > 1 and _not_of_a_name(span[end - 1]):
        end -= 1
    while end - start > 1 and span[start].is_punct:
        start += 1
    return span[start:end]
