"""Deleting documents so that a kill at any point leaves each one, and each file's set of
documents, either whole or gone.

A document's chunks go in batches; a kill between two leaves part of a version, which is not
served (cuerag.graph.serving) and is deleted when found, so the document reads as deleted. A document
read from a file is one of that file's set of documents, served only while the set is whole. When
some documents of a file's set are deleted and others stay, the ones that stay are first stored
as a new, smaller set (new versions: their chunks copied, nothing embedded), which is served once
it is whole, as the newest; then the old set goes. Until the new set is whole the old one is
served, all of it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from cuerag.graph.schema import stored
from cuerag.graph.serving import FILE_DOCS, file_set_of
from cuerag.graph.snapshot import Graph
from cuerag.index.doc_versions import CHUNK_KEY, VERSION_KEYS, chunk_key, doc_version
from cuerag.store.base import StoredPoint

# What a chunk carries besides its text that its version id covers (cuerag.index's labels).
_LABELS = ("source", "root", "file_hash", "doc_metadata", "links")


@dataclass(frozen=True)
class Deletion:
    """What deleting some documents writes: new versions of the documents that stay in a file's
    smaller set first, then the chunks deleted (the documents' own and the old set's)."""

    found: list[str]  # the documents deleted, in the order asked
    rewritten: list[StoredPoint]
    chunk_ids: list[str]


def plan_deletion(graph: Graph, doc_ids: Sequence[str]) -> Deletion:
    by_doc = graph.doc_chunks()
    found = [d for d in dict.fromkeys(doc_ids) if d in by_doc]
    chunk_ids = [graph.chunk_ids[c] for d in found for c in by_doc[d]]
    if graph.points is None:
        return Deletion(found, [], chunk_ids)
    points = graph.points.chunks
    gone = set(found)
    members: dict[tuple[str, str, int], set[str]] = {}
    for point in points.values():
        if FILE_DOCS in point.payload and point.payload.get("source") and point.payload.get("root"):
            members.setdefault(file_set_of(point.payload), set()).add(point.payload["doc_id"])
    touched = {file_set for file_set, docs in members.items() if docs & gone}
    written = time.time_ns()
    rewritten: list[StoredPoint] = []
    for file_set in sorted(touched):
        staying = sorted(members[file_set] - gone)
        for doc in staying:
            old = [points[graph.chunk_ids[c]] for c in by_doc[doc]]
            rewritten.extend(_smaller_set_version(old, len(staying), written))
            chunk_ids.extend(p.id for p in old)
    return Deletion(found, rewritten, chunk_ids)


def _smaller_set_version(old: list[StoredPoint], file_docs: int, written: int) -> list[StoredPoint]:
    """A document's chunks as a new version in its file's smaller set: same text and vectors."""
    old = sorted(old, key=lambda p: int(p.payload.get("index", 0)))
    labels = [{k: p.payload[k] for k in _LABELS if k in p.payload and k != "root"} for p in old]
    version = doc_version([chunk_key(p) for p in old], labels, file_docs)
    out = []
    for point, pid in zip(old, version.ids, strict=True):
        payload = {k: v for k, v in point.payload.items() if k not in VERSION_KEYS}
        payload |= {CHUNK_KEY: chunk_key(point), **stored(version.payload(written))}
        out.append(StoredPoint(id=pid, payload=payload, vector=point.vector))
    return out
