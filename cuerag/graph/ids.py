"""Deterministic point ids: a node's id is a hash of what it is, so indexing the same text twice
writes the same points."""

from __future__ import annotations

import json
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


def labelled_version_id(chunk_keys: list[str], labels: list[dict[str, object]], file_docs: int | None) -> str:
    """One version of a document as stored: its chunks in order, and what each carries besides its
    text (its file, that file's hash and document count, metadata, links). A document whose file
    changed is a new version even where its text did not, so the old one stays whole until the new
    one is (cuerag.graph.serving)."""
    described = json.dumps([chunk_keys, labels, file_docs], sort_keys=True, ensure_ascii=False, default=str)
    return str(uuid.uuid5(_NAMESPACE, "version\x00" + described))


def versioned_chunk_id(chunk_key: str, version: str) -> str:
    """A chunk's point: its content (`chunk_point_id`) in one version of its document. Two versions
    never share a point, so writing one never touches the other."""
    return str(uuid.uuid5(_NAMESPACE, f"point\x00{chunk_key}\x00{version}"))
