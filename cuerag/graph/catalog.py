"""A corpus's documents as a listing: each document's id, title, source, format, chunk count and
tags (front matter's and Markdown's inline `#tags`), read from the chunks' payloads (no vectors,
no model), and pages of it with an opaque cursor.

The cursor is the last id of the page before, with a key of the corpus and the filter it was made
for; a cursor that does not decode, or that was made for another corpus or filter, is refused.
It is no secret: a client that forges one can only start a page elsewhere in the same listing.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from pydantic import BaseModel

from cuerag.errors import BadCursor, ParameterError
from cuerag.graph.schema import ChunkPayload, chunk_payload
from cuerag.ingest.formats.tags import tags_of
from cuerag.store.base import StoredPoint

MAX_PAGE = 200  # documents per page: one page stays a small tool result


class DocumentInfo(BaseModel):
    """One document of a corpus."""

    doc_id: str
    title: str
    source: str  # the file's path under its indexed root; the id of an inline document
    format: str  # the source file's suffix ("md", "pdf", "json"), or "inline"
    chunks: int
    tags: list[str] = []  # the front matter's `tags` and, in Markdown, the text's `#tags`


class DocumentPage(BaseModel):
    corpus: str
    documents: list[DocumentInfo]
    total: int  # documents matching the filter, over all pages
    next_cursor: str | None = None  # pass it back for the next page; None on the last one


@dataclass(frozen=True)
class DocumentTable:
    """A snapshot's documents by id, with each one's chunk positions (empty when read from the
    store rather than a snapshot)."""

    infos: dict[str, DocumentInfo]
    positions: Mapping[str, list[int]]


def catalog(chunks: Iterable[StoredPoint]) -> dict[str, DocumentInfo]:
    """The documents of live chunk points, by id (the metadata rides on a document's first chunk)."""
    counts: dict[str, int] = {}
    first: dict[str, ChunkPayload] = {}
    tags: dict[str, list[str]] = {}
    for point in chunks:
        payload = chunk_payload(point)
        doc_id = str(payload["doc_id"])
        counts[doc_id] = counts.get(doc_id, 0) + 1
        if doc_id not in first or int(payload.get("index", 0)) < int(first[doc_id].get("index", 0)):
            first[doc_id] = payload
        metadata = payload.get("doc_metadata")
        if isinstance(metadata, dict) and metadata:
            tags[doc_id] = tags_of(metadata)
    out: dict[str, DocumentInfo] = {}
    for doc_id in sorted(counts):
        payload = first[doc_id]
        source = payload.get("source")
        suffix = PurePosixPath(str(source)).suffix.lower().lstrip(".") if source else ""
        out[doc_id] = DocumentInfo(
            doc_id=doc_id,
            title=str(payload.get("title", "")),
            source=str(source or doc_id),
            format=suffix or ("file" if source else "inline"),
            chunks=counts[doc_id],
            tags=tags.get(doc_id, []),
        )
    return out


def _key(corpus: str, filter_json: str) -> str:
    return hashlib.sha256(f"{corpus}\x00{filter_json}".encode()).hexdigest()[:16]


def encode_cursor(after: str, corpus: str, filter_json: str) -> str:
    raw = json.dumps([after, _key(corpus, filter_json)], ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def cursor_from(prefix: str, corpus: str) -> str | None:
    """A cursor for the unfiltered listing whose page starts at the first id that may start with
    `prefix` (None for ""): it starts after a string just below `prefix` (its last character one
    lower, then the highest character), which sorts before every id that starts with it."""
    if not prefix:
        return None
    last = ord(prefix[-1]) - 1
    if 0xD800 <= last <= 0xDFFF:  # a surrogate is no character (and no UTF-8): the one below them
        last = 0xD7FF
    below = prefix[:-1] + (chr(last) + chr(sys.maxunicode) if last >= 0 else "")
    return encode_cursor(below, corpus, "{}")


def decode_cursor(cursor: str, corpus: str, filter_json: str) -> str:
    """The id the page starts after; a cursor that was not made for this listing is refused."""
    bad = BadCursor()
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise bad from None
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
        raise bad
    if value[1] != _key(corpus, filter_json):
        raise bad
    after: str = value[0]
    return after


def page(
    corpus: str, documents: list[DocumentInfo], *, filter_json: str, cursor: str | None, limit: int
) -> DocumentPage:
    """One page of `documents` (sorted by id, already filtered), after the cursor's id."""
    if not 1 <= limit <= MAX_PAGE:
        raise ParameterError(f"limit {limit} is out of range: give 1 to {MAX_PAGE}")
    start = 0
    if cursor is not None:
        after = decode_cursor(cursor, corpus, filter_json)
        start = bisect.bisect_right([d.doc_id for d in documents], after)
    chunk = documents[start : start + limit]
    more = start + limit < len(documents)
    return DocumentPage(
        corpus=corpus,
        documents=chunk,
        total=len(documents),
        next_cursor=encode_cursor(chunk[-1].doc_id, corpus, filter_json) if more and chunk else None,
    )
