"""What a corpus looks like in the store, in one place: its collection names, the corpus-name rule,
and the payload each kind of point carries.

Every writer (`cuerag.index`, `cuerag.graph.citations`) and every reader (the snapshot, listings,
sync) names payload keys through the typed dicts below, so mypy fails on both sides when a key is
renamed on one: a silent rename would break every corpus already on disk.
"""

from __future__ import annotations

import re

from cuerag.errors import InvalidNameError

CHUNKS, UNITS, ENTITIES = "chunks", "units", "entities"
KINDS = (CHUNKS, UNITS, ENTITIES)
_PREFIX = "cuerag--"
_CORPUS_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def collection_name(corpus: str, kind: str) -> str:
    """The Qdrant collection holding one kind of node of one corpus."""
    return f"{_PREFIX}{corpus}--{kind}"


def corpus_of_collection(name: str) -> str | None:
    """The corpus a chunks collection belongs to (None for any other collection)."""
    suffix = f"--{CHUNKS}"
    if name.startswith(_PREFIX) and name.endswith(suffix):
        return name[len(_PREFIX) : -len(suffix)]
    return None


def validate_corpus_name(name: str) -> str:
    """A corpus name the store can hold as part of a collection (and folder) name, or InvalidNameError."""
    if not _CORPUS_NAME.fullmatch(name):
        raise InvalidNameError(
            f"invalid corpus name {name!r}: use 1-64 letters, digits, '-' or '_', starting with a letter or digit"
        )
    return name
