"""What a corpus looks like in the store, in one place: its collection names, the corpus-name rule,
and the payload each kind of point carries.

Every writer (`cuerag.index`, `cuerag.graph.citations`) and every reader (the snapshot, listings,
sync) names payload keys through the typed dicts below, so mypy fails on both sides when a key is
renamed on one: a silent rename would break every corpus already on disk.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NotRequired, Required, TypedDict, cast

from cuerag.errors import InvalidNameError
from cuerag.store.base import StoredPoint

CHUNKS, UNITS, ENTITIES = "chunks", "units", "entities"
KINDS = (CHUNKS, UNITS, ENTITIES)
# The theme hierarchy (cuerag.communities.stored): derived from the three above, rewritten by
# every run that changes them, so it is created on its first write and is no part of `KINDS`.
THEMES = "themes"
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


# -- payloads --------------------------------------------------------------------------------------
# `total=False` where a key is absent on some points: an older index, a chunk without structure, a
# document without a file. `Required[...]` marks what every stored point of that kind has.


class LinkPayload(TypedDict, total=False):
    """One hyperlink a chunk holds; `start` is relative to the chunk (it ties the link to a sentence);
    an index made before link places were stored has none."""

    text: str
    target: str
    doc_id: str | None
    wiki: bool
    start: int


class ProvenancePayload(TypedDict, total=False):
    """Which file, under which root, at which content hash a document was read from."""

    source: str
    root: str
    file_hash: str


class CitationPayload(ProvenancePayload, total=False):
    """Where a chunk sits in its document: what its citation and link edges are rebuilt from."""

    section: list[str]
    pages: list[int]
    start: int
    end: int
    gap: str
    doc_chars: int
    links: list[LinkPayload]
    doc_metadata: dict[str, Any]  # the document's (front matter), on its first chunk only


class VersionPayload(TypedDict):
    """Which version of its document a chunk belongs to, how many chunks that version has, when it
    was written, and for a document read from a file, how many documents that file's version
    holds: a version is served only when all its chunks are stored, a file's documents only when
    all of them are (cuerag.graph.serving)."""

    doc_version: str
    doc_chunks: int
    written: int
    file_docs: NotRequired[int]


class ChunkPayload(CitationPayload, total=False):
    doc_id: Required[str]
    title: str
    text: Required[str]
    index: Required[int]
    tokens: int
    unit_ids: Required[list[str]]  # the units it holds, in reading order
    extraction: str  # "sentences" or "llm"
    embedder: str
    vectors: str  # the embedder run's kind of vectors ("float", "int8", ...)
    chunk_vectors: str  # embedded whole, or derived from the units
    title_entity_id: str
    doc_version: str
    doc_chunks: int
    written: int
    file_docs: int
    chunk_key: str  # its content's id (cuerag.graph.ids.chunk_point_id); its point id adds the version


class UnitPayload(TypedDict, total=False):
    text: Required[str]
    entity_ids: list[str]


class EntityPayload(TypedDict, total=False):
    name: Required[str]
    norm: str  # the normalised name that decides identity
    label: str  # spaCy's label, or TITLE for a title entity


class ThemeEvidencePayload(TypedDict):
    """One representative unit of a theme, cited to its chunk and document."""

    unit_id: str
    chunk_id: str
    doc_id: str
    text: str


class ThemePayload(TypedDict):
    """One community of a corpus's theme hierarchy, with its extractive report. `level` 0 is the
    coarsest; `documents` are its member documents (its descendants' included). The `llm_` keys
    are there only when an LLM wrote the theme's title and summary (cuerag.communities.summaries):
    a hierarchy built without one, or before them, has none."""

    theme_id: str
    level: int
    title: str  # the extractive title, kept when an LLM title is added
    terms: list[str]
    entities: list[str]
    evidence: list[ThemeEvidencePayload]
    documents: list[str]
    parent: str | None
    children: list[str]
    llm_title: NotRequired[str]
    llm_summary: NotRequired[str]
    llm_model: NotRequired[str]  # the model that wrote them, as the endpoint names it


class ThemeManifestPayload(TypedDict):
    """The one point that says which theme points make the current hierarchy (written after
    them, so a reader never sees half of a new hierarchy), which version of each document it was
    built from (a stale manifest is what a killed or read-only run leaves: the next run updates
    it), the next free id number per level, the drift from a fresh build and the noise it is
    read against."""

    manifest: bool
    points: list[str]
    doc_versions: dict[str, str]
    next_ids: dict[str, int]
    drift: float
    noise: float  # the drift of a fresh build against one with another seed: what drift is read against
    # Documents added, changed or deleted since drift was last measured (absent before it was kept).
    unmeasured: NotRequired[int]


def chunk_payload(point: StoredPoint) -> ChunkPayload:
    """A stored chunk's payload, typed: readers name its keys through this, so mypy checks them."""
    return cast(ChunkPayload, point.payload)


def unit_payload(point: StoredPoint) -> UnitPayload:
    return cast(UnitPayload, point.payload)


def entity_payload(point: StoredPoint) -> EntityPayload:
    return cast(EntityPayload, point.payload)


def theme_payload(point: StoredPoint) -> ThemePayload:
    return cast(ThemePayload, point.payload)


def theme_manifest_payload(point: StoredPoint) -> ThemeManifestPayload:
    return cast(ThemeManifestPayload, point.payload)


def stored(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A typed payload as the store takes it (a plain dict)."""
    return dict(payload)
