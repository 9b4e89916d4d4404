"""What an extractor gives back: a document's text as one string, and its structure as character
spans into that string (sections with their heading path, pages, hyperlinks).

Spans are `[start, end)` offsets into `text`, so `text[start:end]` is what they cover; a chunk's
citation is a span too, and slicing the text with it gives the chunk back.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Span(BaseModel):
    start: int = Field(ge=0)
    end: int = Field(ge=0)


class Section(Span):
    """A run of text under one heading. `path` is the heading and its ancestors, outermost first
    (["Billing", "Refunds"]); the span covers the heading line too. `heading_end` is where the
    heading line ends: the text before it is structure, not a statement to learn from."""

    path: list[str] = []
    heading_end: int | None = None


class Page(Span):
    """A PDF page: its 1-based number and, where the file labels its pages ("iv", "12"), the label."""

    number: int = Field(ge=1)
    label: str | None = None


class Link(Span):
    """A hyperlink: its target as written (`href`, `(rel.md)`, `[[Wiki Page]]`), the target document
    id it resolves to inside the corpus (None when it leaves the corpus), and its anchor text.
    `wiki`: a `[[wikilink]]`, resolved by title or file stem when the graph is built."""

    target: str
    doc_id: str | None = None
    wiki: bool = False
    text: str = ""


class DocumentStructure(BaseModel):
    """Sections, pages, links and metadata of an extracted document."""

    sections: list[Section] = []
    pages: list[Page] = []
    links: list[Link] = []
    metadata: dict[str, Any] = {}
    format: str = "text"


class Extracted(BaseModel):
    """One document as an extractor reads it: its own title (None: use the file name), its text
    and structure."""

    title: str | None = None
    text: str
    structure: DocumentStructure = DocumentStructure()
