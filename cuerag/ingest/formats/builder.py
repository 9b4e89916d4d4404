"""Building a document's text from a parsed tree while keeping its structure as spans: inline text
with whitespace collapsed, blocks separated by a blank line, headings opening sections, hyperlinks
remembered where their anchor text lands."""

from __future__ import annotations

import re

from cuerag.ingest.formats.model import Link, Section

_WS = re.compile(r"\s+")
_BLOCK_BREAK = "\n\n"


class TextBuilder:
    """Accumulates text; every span it records is trimmed of surrounding whitespace at the end."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._len = 0
        self._pending = ""  # a break to write before the next text
        self._last = "\n"  # the last character written ("\n" at the start: no leading space)
        self._sections: list[Section] = [Section(start=0, end=0, path=[])]
        self._levels: list[tuple[int, str]] = []  # the open headings, outermost first
        self._links: list[Link] = []

    @property
    def pos(self) -> int:
        return self._len

    def _flush_break(self) -> None:
        """Write the pending break, dropping the space that ended the line before it."""
        if self._pending and self._len:
            if self._parts[-1].endswith(" "):
                self._parts[-1] = self._parts[-1][:-1]
                self._len -= 1
            self._parts.append(self._pending)
            self._len += len(self._pending)
            self._last = "\n"
        self._pending = ""

    def _write(self, s: str) -> None:
        if not s:
            return
        self._flush_break()
        self._parts.append(s)
        self._len += len(s)
        self._last = s[-1]

    def inline(self, s: str) -> None:
        """Running text: whitespace runs collapsed to one space, none at the start of a block."""
        s = _WS.sub(" ", s)
        if (self._pending or self._last.isspace()) and s.startswith(" "):
            s = s[1:]
        self._write(s)

    def raw(self, s: str) -> None:
        """Preformatted text, written as it is (line ends normalised)."""
        self._write(s.replace("\r\n", "\n").replace("\r", "\n"))

    def block(self) -> None:
        """End the current block: the next text starts after a blank line."""
        self._pending = _BLOCK_BREAK

    def line_break(self) -> None:
        if not self._pending:
            self._pending = "\n"

    def heading(self, level: int, title: str) -> None:
        """Open a section under `title` at heading level `level` (1 outermost)."""
        title = _WS.sub(" ", title).strip()
        if not title:
            return
        self.block()
        self._flush_break()
        while self._levels and self._levels[-1][0] >= level:
            self._levels.pop()
        self._levels.append((level, title))
        self._sections[-1].end = self._len
        start = self._len
        self._write(title)
        self._sections.append(Section(start=start, end=start, path=[t for _, t in self._levels], heading_end=self._len))
        self.block()

    def link(self, target: str, start: int, *, wiki: bool = False) -> None:
        """A hyperlink whose anchor text was written from `start` to here."""
        target = target.strip()
        if target:
            self._links.append(Link(start=start, end=self._len, target=target, wiki=wiki))

    def finish(self) -> tuple[str, list[Section], list[Link]]:
        """The text, its non-empty sections and its links with anchor text, spans trimmed."""
        text = "".join(self._parts)
        self._sections[-1].end = len(text)
        sections = []
        for sec in self._sections:
            start, end = trim(text, sec.start, sec.end)
            if start < end:
                sections.append(sec.model_copy(update={"start": start, "end": end}))
        links = []
        for link in self._links:
            start, end = trim(text, min(link.start, len(text)), min(link.end, len(text)))
            links.append(link.model_copy(update={"start": start, "end": end, "text": text[start:end]}))
        return text, sections, links


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """A span with the whitespace at both ends left out."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
