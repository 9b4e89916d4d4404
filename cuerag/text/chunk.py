"""The chunk model: a piece of a document (`TextChunk`), where it sits in its document
(`ChunkPlace`), and the one form a chunk is embedded and shown in (`titled`).

Its own module so that chunking and the text tools both use it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field

from cuerag.ingest.formats import Link

SECTION_SEP = " › "  # between the headings of a section path: "Billing › Refunds"


def heading_lines(title: str, section: str = "") -> str:
    """What `titled` puts before a chunk's text: its title, then its section's heading path."""
    return "\n".join(h for h in (title, section) if h)


def titled(title: str, text: str, section: str = "") -> str:
    """A chunk's text with its title on the first line and its section's heading path on the next
    (when it has one): the one form chunks are embedded in."""
    head = heading_lines(title, section)
    return f"{head}\n{text}" if head else text


@dataclass(frozen=True)
class TextChunk:
    """A piece of a document: its position, the title it belongs to and its text."""

    index: int
    title: str
    text: str
    tokens: int
    place: ChunkPlace | None = None  # where in its document (a chunk of a file read with structure)

    @property
    def full_text(self) -> str:
        """Title, heading path and text together: what is embedded and shown."""
        return titled(self.title, self.text, self.place.heading if self.place is not None else "")

    @property
    def head(self) -> str:
        """The title and heading path `full_text` starts with ("" when it has neither)."""
        return heading_lines(self.title, self.place.heading if self.place is not None else "")

    @property
    def unit_text(self) -> str:
        """The text knowledge units are split from: the chunk's text less its heading lines."""
        return self.place.unit_text if self.place is not None else self.text


@dataclass(frozen=True)
class ChunkPlace:
    """Where a chunk sits in its document."""

    start: int
    end: int
    section: tuple[str, ...] = ()
    pages: tuple[int, ...] = ()
    links: tuple[Link, ...] = ()
    gap: str = ""  # the whitespace between the previous chunk's end and this chunk's start
    doc_chars: int = 0  # the length of the document's extracted text
    unit_text: str = ""  # the chunk's text with its heading lines blanked out
    metadata: dict[str, object] = field(default_factory=dict)  # the document's, on its first chunk only

    @property
    def heading(self) -> str:
        return SECTION_SEP.join(self.section)
