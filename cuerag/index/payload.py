"""A chunk's labels in its stored payload: which file (and version of it) the document came from,
its metadata and its links. They are part of a document's version (cuerag.index.doc_versions)."""

from __future__ import annotations

from cuerag.graph.citations import links_payload
from cuerag.graph.schema import ProvenancePayload
from cuerag.ingest.documents import Document
from cuerag.store.base import StoredPoint
from cuerag.text.chunk import TextChunk

_PROVENANCE = ("source", "root", "file_hash")

# The payload keys a kept chunk is brought up to date in: its file's provenance, the document's
# metadata (front matter, on its first chunk) and the chunk's hyperlinks (their targets and places),
# which an edit can change while the text, and so every chunk id, stays the same.
_LABELS = (*_PROVENANCE, "doc_metadata", "links")


def _provenance(doc: Document) -> ProvenancePayload:
    """The payload keys that say which file (and which version of it) a document came from."""
    out: ProvenancePayload = {}
    if doc.source is not None:
        out["source"] = doc.source
    if doc.root is not None:
        out["root"] = doc.root
    if doc.file_hash is not None:
        out["file_hash"] = doc.file_hash
    return out


def _labels(provenance: ProvenancePayload, piece: TextChunk) -> dict[str, object]:
    """A chunk's labels (`_LABELS`) as the document gives them now."""
    labels: dict[str, object] = dict(provenance)
    if piece.place is not None:
        labels["links"] = links_payload(piece.place)
        if piece.place.metadata:
            labels["doc_metadata"] = piece.place.metadata
    return labels


def relabel_in_place(kept: list[StoredPoint], labels: list[dict[str, object]], root: str | None) -> bool:
    """Whether an unchanged document's chunks are rewritten in place, the same points, nothing
    embedded: its folder moved (the root, which no reader depends on), or what they carry was
    stored wrong by an older version (links resolved from the wrong folder: cuerag.index.stale_links)."""
    if any(p.payload.get("root") != root for p in kept):
        return True
    return any(
        p.payload.get(k) != lb.get(k) for p, lb in zip(kept, labels, strict=True) for k in _LABELS if k != "root"
    )
