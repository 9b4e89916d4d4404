"""Chunks that follow a document's structure, each knowing its place: the character span it
covers in the document's extracted text, the heading path of the section it starts in, its pages
(PDF) and the hyperlinks it holds.

Each section is a chunk of its own (a short one that opens a subsection is joined to it); a
section larger than the token budget is cut into overlapping token windows. A chunk never holds
text of two sibling sections, so its heading path is true of all of it. A document without
structure is one section, cut exactly as `TextTools.chunk` cuts it.
"""

from __future__ import annotations

from cuerag.ingest.documents import Document
from cuerag.ingest.formats import Section
from cuerag.ingest.formats.builder import trim
from cuerag.text.chunk import ChunkPlace, TextChunk
from cuerag.text.tools import TextTools

# A section under 1/8 of the chunk budget that opens a subsection is joined to it.
_SHORT_SHARE = 8


def chunk_document(tools: TextTools, doc: Document, *, max_tokens: int, overlap: int) -> list[TextChunk]:
    """The chunks of a document, each with its `place`."""
    text = doc.text
    structure = doc.structure
    sections = list(structure.sections) if structure is not None and structure.sections else []
    if not sections:
        start, end = trim(text, 0, len(text))
        sections = [Section(start=start, end=end, path=[])]
    spans = _spans(tools, text, sections, max_tokens=max_tokens, overlap=overlap)
    headings = [(s.start, s.heading_end) for s in sections if s.heading_end is not None]
    pages = list(structure.pages) if structure is not None else []
    links = list(structure.links) if structure is not None else []
    chunks: list[TextChunk] = []
    previous_end = 0
    for index, (start, end, path, tokens) in enumerate(spans):
        body = text[start:end]
        place = ChunkPlace(
            start=start,
            end=end,
            section=tuple(path),
            pages=tuple(p.number for p in pages if p.start < end and p.end > start),
            links=tuple(link for link in links if start <= link.start < end),
            gap=text[previous_end:start] if start >= previous_end and not text[previous_end:start].strip() else "",
            doc_chars=len(text),
            unit_text=_without_headings(text, start, end, headings),
            metadata=dict(structure.metadata) if structure is not None and index == 0 else {},
        )
        chunks.append(TextChunk(index, doc.title, body, tokens, place))
        previous_end = max(previous_end, end)
    return chunks


def _spans(
    tools: TextTools, text: str, sections: list[Section], *, max_tokens: int, overlap: int
) -> list[tuple[int, int, list[str], int]]:
    """(start, end, heading path, tokens) of each chunk: one per section, a section over the
    budget cut into windows. A short section that leads into its own subsection (a chapter's
    opening lines, the text before the first heading) joins that subsection's chunk, which
    keeps the subsection's path: the parent's path is a prefix of it, so it is true of both."""
    out: list[tuple[int, int, list[str], int]] = []
    short = max(16, max_tokens // _SHORT_SHARE)
    carry: tuple[int, int] | None = None  # (start, tokens) of short sections waiting for a child
    for n, sec in enumerate(sections):
        tokens = tools.count_tokens(text[sec.start : sec.end])
        start, total = (carry[0], carry[1] + tokens) if carry else (sec.start, tokens)
        nxt = sections[n + 1] if n + 1 < len(sections) else None
        leads_in = nxt is not None and nxt.path[: len(sec.path)] == sec.path
        if leads_in and total < short:
            carry = (start, total)
            continue
        carry = None
        if total > max_tokens:
            if start < sec.start:  # the parent's opening lines go on their own
                out.append((start, sec.start, list(sec.path), total - tokens))
            out.extend(_windows(tools, text, sec, max_tokens=max_tokens, overlap=overlap))
        else:
            out.append((start, sec.end, list(sec.path), total))
    return [(s, e, path, t) for s, e, path, t in (_trimmed(text, span) for span in out) if s < e]


def _trimmed(text: str, span: tuple[int, int, list[str], int]) -> tuple[int, int, list[str], int]:
    start, end = trim(text, span[0], span[1])
    return start, end, span[2], span[3]


def _windows(
    tools: TextTools, text: str, sec: Section, *, max_tokens: int, overlap: int
) -> list[tuple[int, int, list[str], int]]:
    """Overlapping token windows over one section, as character spans of the document's text."""
    piece = text[sec.start : sec.end]
    tokens = tools.encoding.encode(piece, disallowed_special=())
    decoded, offsets = tools.encoding.decode_with_offsets(tokens)
    if decoded != piece:  # offsets would not point into the text: fall back to one span per section
        return [(sec.start, sec.end, list(sec.path), len(tokens))]
    out = []
    step = max_tokens - overlap
    for first in range(0, len(tokens), step):
        last = min(first + max_tokens, len(tokens))
        start = sec.start + offsets[first]
        end = sec.start + (offsets[last] if last < len(tokens) else len(piece))
        start, end = trim(text, start, end)
        if start < end:
            out.append((start, end, list(sec.path), last - first))
        if last >= len(tokens):
            break
    return out


def _without_headings(text: str, start: int, end: int, headings: list[tuple[int, int]]) -> str:
    """The chunk's text with every heading line in it replaced by a blank line: a heading names a
    section, it states nothing, and must not become a knowledge unit."""
    parts: list[str] = []
    at = start
    for h_start, h_end in headings:
        if h_end <= at or h_start >= end:
            continue
        parts.append(text[at : max(at, h_start)])
        parts.append("\n\n")
        at = min(max(at, h_end), end)
    parts.append(text[at:end])
    return "".join(parts)
