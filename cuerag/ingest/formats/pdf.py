"""PDF (pypdfium2, PDFium's text layer): the text page by page with each page's span, sections
from the document outline (bookmarks), the title from the metadata or the first line.

No OCR is done: a PDF whose pages hold no text (a scan) is refused and says so. PDFium is not
thread-safe, so one lock serialises every use of it in this process.
"""

from __future__ import annotations

import re
import threading

import pypdfium2 as pdfium

from cuerag.errors import InputError
from cuerag.ingest.formats.model import DocumentStructure, Extracted, Page, Section
from cuerag.ingest.formats.reading import ReadLimits

_PDFIUM = threading.Lock()
_PAGE_BREAK = "\n\n"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_WS = re.compile(r"\s+")


def extract_pdf(raw: bytes, *, name: str, source: str | None, limits: ReadLimits) -> Extracted:
    with _PDFIUM:
        try:
            doc = pdfium.PdfDocument(raw)
        except pdfium.PdfiumError as exc:
            reason = str(exc)
            if "password" in reason.lower():
                raise InputError(f"{name}: the PDF is encrypted (password-protected); decrypt it first") from None
            raise InputError(f"{name}: not a readable PDF (truncated or corrupt: {reason})") from None
        try:
            return _read(doc, name, limits)
        finally:
            doc.close()


def _read(doc: pdfium.PdfDocument, name: str, limits: ReadLimits) -> Extracted:
    count = len(doc)
    if count == 0:
        raise InputError(f"{name}: the PDF has no pages")
    if count > limits.max_pdf_pages:
        raise InputError(
            f"{name}: the PDF has {count} pages, over the limit of {limits.max_pdf_pages}; split it or raise "
            "CUERAG_MAX_PDF_PAGES"
        )
    parts: list[str] = []
    pages: list[Page] = []
    pos = 0
    for i in range(count):
        page = doc[i]
        try:
            textpage = page.get_textpage()
            try:
                text = textpage.get_text_range()
            finally:
                textpage.close()
        except pdfium.PdfiumError as exc:
            raise InputError(f"{name}: page {i + 1} cannot be read ({exc})") from None
        finally:
            page.close()
        text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n")).strip()
        if parts:
            parts.append(_PAGE_BREAK)
            pos += len(_PAGE_BREAK)
        label = doc.get_page_label(i) or None
        pages.append(Page(start=pos, end=pos + len(text), number=i + 1, label=label))
        parts.append(text)
        pos += len(text)
    body = "".join(parts)
    if not body.strip():
        raise InputError(f"{name}: the PDF has no text layer (a scan?); OCR is not done, so there is nothing to index")
    meta = {k: v for k, v in doc.get_metadata_dict().items() if v and k in ("Title", "Author", "Subject", "Keywords")}
    title = _WS.sub(" ", meta.get("Title", "")).strip() or _first_line(body)
    return Extracted(
        title=title,
        text=body,
        structure=DocumentStructure(
            sections=_outline_sections(doc, body, pages), pages=pages, metadata=meta, format="pdf"
        ),
    )


def _first_line(text: str) -> str | None:
    for line in text.splitlines():
        line = _WS.sub(" ", line).strip()
        if len(line) > 2:
            return line[:200]
    return None


def _outline_sections(doc: pdfium.PdfDocument, body: str, pages: list[Page]) -> list[Section]:
    """Sections from the outline: each bookmark starts where its title is found on its target page
    (else at the page's start); its heading path is its place in the outline."""
    starts: list[tuple[int, list[str], int | None]] = []
    stack: list[str] = []
    last = 0
    for item in doc.get_toc(max_depth=8):
        title = _WS.sub(" ", item.get_title() or "").strip()
        dest = item.get_dest()
        index = dest.get_index() if dest is not None else None
        if not title or index is None or not 0 <= index < len(pages):
            continue
        del stack[item.level :]
        stack.append(title)
        page = pages[index]
        found = _find_heading(body, title, max(page.start, last), page.end)
        start = found if found is not None else page.start
        if start < last:
            continue  # the outline runs backwards here: keep the text in reading order
        starts.append((start, list(stack), None if found is None else found + _heading_len(body, found, title)))
        last = start
    if not starts:
        return []
    sections: list[Section] = []
    if starts[0][0] > 0:
        sections.append(Section(start=0, end=starts[0][0], path=[]))
    for n, (start, path, heading_end) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(body)
        if end > start:
            sections.append(Section(start=start, end=end, path=path, heading_end=heading_end))
    return sections


# The longest bookmark title looked for on its page: a heading, a line or two (`_find_heading`).
_HEADING_WORDS = 40
_HEADING_CHARS = 400


def _find_heading(body: str, title: str, start: int, end: int) -> int | None:
    """Where a bookmark's title appears on its page, matched whatever the line breaks and spacing.
    A title longer than a heading is not looked for (its bookmark starts at its page's start): the
    search tries the words from every place on the page, each try going as far as the page repeats
    the title, so a PDF whose page and bookmark titles repeat "a " 100,000 times held the GIL for
    minutes per bookmark."""
    words = [re.escape(w) for w in title.split()]
    if not words or len(words) > _HEADING_WORDS or len(title) > _HEADING_CHARS:
        return None
    m = re.compile(r"\s*".join(words), re.IGNORECASE).search(body, start, end)
    return m.start() if m else None


def _heading_len(body: str, at: int, title: str) -> int:
    words = [re.escape(w) for w in title.split()]
    m = re.compile(r"\s*".join(words), re.IGNORECASE).match(body, at)
    return len(m.group()) if m else 0
