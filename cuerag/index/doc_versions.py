"""The version of a document an index run writes, and how it relates to the one stored.

A chunk has a content key (`chunk_point_id`: its document, position, text and the index settings
that shape it) and a point id that adds the document's version (`versioned_chunk_id`). A document
whose stored version is this very version is unchanged and costs nothing. Otherwise every chunk
of the new version is a new point: a chunk whose content key is stored already is copied, vector
and all (nothing is embedded), and only new content is embedded. The old version's points are
deleted after the new version is stored, so at every instant one of the two is complete
(cuerag.graph.serving).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cuerag.graph.ids import labelled_version_id, versioned_chunk_id
from cuerag.graph.schema import VersionPayload, stored
from cuerag.graph.serving import FILE_DOCS, VERSION, VERSION_CHUNKS, WRITTEN
from cuerag.graph.snapshot import Graph
from cuerag.index.payload import _LABELS
from cuerag.ingest.documents import Document
from cuerag.store.base import StoredPoint

CHUNK_KEY = "chunk_key"
VERSION_KEYS = (VERSION, VERSION_CHUNKS, WRITTEN, FILE_DOCS)


@dataclass(frozen=True)
class DocVersion:
    """One document's version as this run would store it."""

    version: str
    keys: list[str]  # content keys, in order
    ids: list[str]  # point ids, in order
    file_docs: int | None  # documents of its file's version; None for a document not read from a file

    def payload(self, written: int) -> VersionPayload:
        """What every chunk of the version carries about it."""
        out: VersionPayload = {"doc_version": self.version, "doc_chunks": len(self.ids), "written": written}
        if self.file_docs is not None:
            out["file_docs"] = self.file_docs
        return out


def doc_version(keys: list[str], labels: list[dict[str, object]], file_docs: int | None) -> DocVersion:
    version = labelled_version_id(keys, labels, file_docs)
    return DocVersion(version, keys, [versioned_chunk_id(k, version) for k in keys], file_docs)


def file_doc_counts(docs: Sequence[Document]) -> dict[tuple[str, str, str], int]:
    """How many documents each file version of a run holds: (root, source, file hash) -> count. A
    run is given every document of each file it read (cuerag.index.sync), so this is the file's count."""
    counts: dict[tuple[str, str, str], int] = {}
    for doc in docs:
        key = file_key(doc)
        if key is not None:
            counts[key] = counts.get(key, 0) + 1
    return counts


def file_key(doc: Document) -> tuple[str, str, str] | None:
    if doc.source is None or doc.root is None or doc.file_hash is None:
        return None
    return (doc.root, doc.source, doc.file_hash)


def chunk_key(point: StoredPoint) -> str:
    """A stored chunk's content key: recorded since versions got their own points; before, the
    point id was the content key."""
    return str(point.payload.get(CHUNK_KEY, point.id))


def stored_by_key(graph: Graph, doc_id: str, positions: list[int]) -> dict[str, StoredPoint]:
    """The served chunks of a document by content key."""
    if graph.points is None:
        return {}
    points = (graph.points.chunks[graph.chunk_ids[c]] for c in positions)
    return {chunk_key(p): p for p in points}


def copied_points(
    copied: list[tuple[StoredPoint, str, str, dict[str, object]]], versions: dict[str, DocVersion], written: int
) -> list[StoredPoint]:
    """The chunks of new versions whose content is stored: (stored point, new id, document id, its
    labels now) as the stored point under its new id, with the new version's labels."""
    out = []
    for old, pid, doc_id, labels in copied:
        # The old version's own keys go (a file count the new version may not have).
        payload = {k: v for k, v in old.payload.items() if k not in _LABELS and k not in VERSION_KEYS} | labels
        payload |= {CHUNK_KEY: chunk_key(old), **stored(versions[doc_id].payload(written))}
        out.append(StoredPoint(id=pid, payload=payload, vector=old.vector))
    return out
