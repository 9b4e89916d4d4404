"""Deterministic point ids: a node's id is a hash of what it is, so indexing the same text twice
writes the same points."""

from __future__ import annotations

import uuid

from cuerag.text.entities import normalize_entity

_NAMESPACE = uuid.UUID("5b0c3e1e-6f1d-4d8a-9a53-0c2f6b1f8e7a")


def chunk_point_id(doc_id: str, index: int, text: str, variant: str = "") -> str:
    """A chunk: its document, its position there, its text, and the index settings that shape its
    payload (`variant`), so that changing them re-indexes the document instead of skipping it."""
    return str(uuid.uuid5(_NAMESPACE, f"chunk\x00{doc_id}\x00{index}\x00{text}\x00{variant}"))


def unit_point_id(text: str) -> str:
    """A knowledge unit: its text (identical statements are one node)."""
    return str(uuid.uuid5(_NAMESPACE, f"unit\x00{text}"))


def entity_point_id(name: str) -> str:
    """An entity: its normalised name."""
    return str(uuid.uuid5(_NAMESPACE, f"entity\x00{normalize_entity(name)}"))


def doc_version_id(chunk_ids: list[str]) -> str:
    """One version of a document: the chunks it is made of, in order. Every chunk of the version
    carries it, so that two versions left side by side by a crash can be told apart."""
    return str(uuid.uuid5(_NAMESPACE, "version\x00" + "\x00".join(chunk_ids)))
