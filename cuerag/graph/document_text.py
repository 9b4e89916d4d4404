"""Reading a document back from the store: its extracted text rebuilt from its chunks' spans, whole
or as a window around a chunk, so that an agent can quote more than the chunk it found.

Chunks cover every non-blank character of a document (each stores the blank run before it), so
the text comes back exactly as it was extracted; a corpus indexed before chunks had spans gives
its chunks' texts joined by blank lines instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from cuerag.errors import ParameterError
from cuerag.graph.schema import ChunkPayload
from cuerag.graph.snapshot import Graph
from cuerag.text.chunk import SECTION_SEP

# How far a window around a chunk backs up so as to start at a word, not inside one ("ression is"):
# further than any word runs. Text with no space that near (a long URL, Chinese) starts where it fell.
WORD_BACKUP = 40


class SectionStart(BaseModel):
    heading: str
    start: int


class DocumentText(BaseModel):
    """A document's text, or the window `[start, end)` of it asked for."""

    doc_id: str
    title: str
    source: str
    text: str
    start: int
    end: int
    total_chars: int
    pages: list[int] = []  # the PDF pages the window spans
    sections: list[SectionStart] = []  # where each section of the document starts
    metadata: dict[str, Any] = {}  # e.g. a Markdown file's front matter
    chunk_id: str | None = None  # the chunk the window is centred on
    has_spans: bool = True  # False: an old index; offsets are into the joined chunk texts
    # Where the next window starts (`start` of the next read), None at the document's end: a long
    # document is read a window at a time, each under the clients' result limits.
    next_start: int | None = None


def read_document(
    graph: Graph,
    *,
    doc_id: str | None = None,
    chunk_id: str | None = None,
    start: int = 0,
    max_chars: int = 20_000,
    context: int = 1_000,
) -> DocumentText:
    """A document's text from `start` (at most `max_chars` characters), or, given `chunk_id`, the
    chunk with `context` characters either side, the window starting at a word (`WORD_BACKUP`)."""
    # Checked here, not only in the MCP schema: the CLI and the library pass them through, and a
    # negative max_chars sliced text[0:-1] (the whole document) with end and next_start -1.
    if max_chars < 1:
        raise ParameterError(f"max_chars must be 1 or more, not {max_chars}")
    if context < 0:
        raise ParameterError(f"context must be 0 or more, not {context}")
    if chunk_id is not None:
        c = graph.chunk_pos.get(chunk_id)
        if c is None:
            raise ParameterError(f"unknown chunk id {chunk_id!r}; use a chunk id returned by this corpus's tools")
        if doc_id is not None and doc_id != graph.chunk_docs[c]:
            raise ParameterError(f"chunk {chunk_id!r} belongs to document {graph.chunk_docs[c]!r}, not {doc_id!r}")
        doc_id = graph.chunk_docs[c]
    if doc_id is None:
        raise ParameterError("give a document id or a chunk id")
    by_doc = graph.doc_chunks()
    positions = by_doc.get(doc_id)
    if not positions:
        shown = doc_id if len(doc_id) <= 120 else doc_id[:119] + "…"  # the error must not echo a huge id
        near = _same_file(doc_id, by_doc)
        hint = f"; did you mean {', '.join(map(repr, near))}?" if near else ""
        raise ParameterError(f"unknown document id {shown!r}{hint}; document ids come with every hit (doc_id)")
    payloads = [graph.chunk_payload(c) for c in positions]
    text, spans, has_spans = _rebuild(graph, positions, payloads)
    if chunk_id is not None:
        chunk_start, chunk_end = spans[positions.index(graph.chunk_pos[chunk_id])]
        # The context before the chunk fits the window too: unbounded, `context` (up to 50,000)
        # made a window over the clients' result limit that `max_chars` keeps it under.
        before = min(context, max(0, (max_chars - (chunk_end - chunk_start)) // 2))
        lo = _word_start(text, max(0, chunk_start - before))
        hi = min(len(text), chunk_end + context, lo + max(max_chars, chunk_end - lo))
    else:
        if start < 0 or start > len(text):
            raise ParameterError(f"start {start} is outside the document (0..{len(text)})")
        lo, hi = start, min(len(text), start + max_chars)
    pages = sorted(
        {
            p
            for span, pl in zip(spans, payloads, strict=True)  # not positions.index: quadratic in chunks
            for p in pl.get("pages", [])
            if _overlaps(span, lo, hi)
        }
    )
    sections = []
    seen: set[str] = set()
    for (s, _), pl in zip(spans, payloads, strict=True):
        heading = SECTION_SEP.join(pl.get("section", []))
        if heading and heading not in seen:
            seen.add(heading)
            sections.append(SectionStart(heading=heading, start=s))
    first = payloads[0]
    return DocumentText(
        doc_id=doc_id,
        title=graph.chunk_titles[positions[0]],
        source=str(first.get("source") or doc_id),
        text=text[lo:hi],
        start=lo,
        end=hi,
        total_chars=len(text),
        pages=pages,
        sections=sections,
        metadata=dict(first.get("doc_metadata", {})),
        chunk_id=chunk_id,
        has_spans=has_spans,
        next_start=hi if hi < len(text) else None,
    )


def _same_file(given: str, doc_ids: Iterable[str], most: int = 3) -> list[str]:
    """Document ids naming the same file as `given` seen from another folder: an index report lists
    files by the path they were walked under ("docs/api.html") and the id is relative to the
    indexed folder ("api.html"), so a path copied from the report is one folder off."""
    given = given.strip("/")
    if not given or len(given) > 1_000:
        return []
    found = [d for d in doc_ids if given.endswith("/" + d) or d.endswith("/" + given)]
    return sorted(found, key=len)[:most]


def _word_start(text: str, at: int) -> int:
    """`at`, or the start of the word it falls inside when that is at most WORD_BACKUP back."""
    for i in range(at, max(0, at - WORD_BACKUP) - 1, -1):
        if i == 0 or text[i - 1].isspace():
            return i
    return at


def _overlaps(span: tuple[int, int], lo: int, hi: int) -> bool:
    return span[0] < hi and span[1] > lo


def _rebuild(
    graph: Graph, positions: list[int], payloads: list[ChunkPayload]
) -> tuple[str, list[tuple[int, int]], bool]:
    """The document's text and each chunk's span in it."""
    texts = [graph.chunk_texts[c] for c in positions]
    if all(isinstance(p.get("start"), int) and isinstance(p.get("end"), int) for p in payloads):
        order = sorted(range(len(positions)), key=lambda i: (payloads[i]["start"], payloads[i]["end"]))
        out = ""
        for i in order:
            s, e, piece = payloads[i]["start"], payloads[i]["end"], texts[i]
            if s >= len(out):
                gap = str(payloads[i].get("gap", ""))
                out += gap if len(gap) == s - len(out) else "\n" * (s - len(out))
                out += piece
            elif e > len(out):  # overlapping windows: add what this one has beyond the last
                out += piece[len(out) - s :]
        return out, [(p["start"], p["end"]) for p in payloads], True
    spans = []
    at = 0
    for piece in texts:
        spans.append((at, at + len(piece)))
        at += len(piece) + 2
    return "\n\n".join(texts), spans, False
