"""Citations: where a chunk came from (its file relative to the indexed root, or the id of an
inline document; its pages; the heading path of its section; its character span in the
document's extracted text) and where its hyperlinks point. Written into the chunk's payload at
index time, read back from the graph for every hit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from cuerag.graph.schema import CitationPayload, LinkPayload
from cuerag.text.chunk import SECTION_SEP

if TYPE_CHECKING:
    from cuerag.graph.snapshot import Graph
    from cuerag.text.chunk import ChunkPlace


class ChunkLink(BaseModel):
    """A hyperlink in a chunk: its anchor text and target as written, and the corpus document it
    leads to (None: it leaves the corpus, or its target is not indexed)."""

    text: str
    target: str
    doc_id: str | None = None


class Citation(BaseModel):
    """Where a chunk sits in its document, enough to quote and to find it again."""

    source: str  # path relative to the indexed root; the document id for an inline document
    doc_id: str
    section: list[str] = []  # heading path, outermost first
    heading: str = ""  # the same, joined: "Billing › Refunds"
    pages: list[int] = []  # 1-based PDF pages the chunk spans
    start: int | None = None  # character span in the document's extracted text
    end: int | None = None
    links: list[ChunkLink] = []  # hyperlinks in the chunk, to corpus documents first


def citation_payload(place: ChunkPlace | None, source: str | None) -> CitationPayload:
    """The payload fields a chunk's citation and link edges are rebuilt from."""
    out: CitationPayload = {}
    if source is not None:
        out["source"] = source
    if place is None:
        return out
    out["section"] = list(place.section)
    out["pages"] = list(place.pages)
    out["start"] = place.start
    out["end"] = place.end
    out["gap"] = place.gap
    out["doc_chars"] = place.doc_chars
    out["links"] = links_payload(place)
    if place.metadata:
        out["doc_metadata"] = place.metadata
    return out


def links_payload(place: ChunkPlace) -> list[LinkPayload]:
    """The payload form of a chunk's hyperlinks. A link's start is kept relative to the chunk: it
    ties the link to the sentence it is in (cuerag.retrieval.link_edges)."""
    return [
        {
            "text": link.text,
            "target": link.target,
            "doc_id": link.doc_id,
            "wiki": link.wiki,
            "start": link.start - place.start,
        }
        for link in place.links
    ]


def citation_of(graph: Graph, c: int) -> Citation:
    """The citation of the chunk at position `c`, its links resolved against the corpus."""
    doc_id = graph.chunk_docs[c]
    payload = graph.chunk_payload(c)
    section = [str(s) for s in payload.get("section", [])]
    resolved = graph.chunk_links[c] if c < len(graph.chunk_links) else {}
    links = [
        ChunkLink(text=str(link.get("text", "")), target=str(link.get("target", "")), doc_id=resolved.get(n))
        for n, link in enumerate(payload.get("links", []))
    ]
    links.sort(key=lambda link: link.doc_id is None)
    return Citation(
        source=str(payload.get("source") or doc_id),
        doc_id=doc_id,
        section=section,
        heading=SECTION_SEP.join(section),
        pages=[int(p) for p in payload.get("pages", [])],
        start=payload.get("start"),
        end=payload.get("end"),
        links=links,
    )
