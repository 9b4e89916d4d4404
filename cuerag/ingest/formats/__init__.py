"""Document formats: one extractor per format, chosen by the file's suffix, each turning a file's
bytes into text plus structure (sections, pages, links, metadata; see `model`).

`SUPPORTED_SUFFIXES` is the one list of what a folder walk picks up; JSON corpora (records with
their own ids) are read by `cuerag.ingest.documents`.
"""

from __future__ import annotations

from cuerag.errors import InputError
from cuerag.ingest.formats.model import DocumentStructure, Extracted, Link, Page, Section, Span
from cuerag.ingest.formats.reading import ByteBudget, Check, ReadLimits, read_file_once

PLAIN_SUFFIXES = frozenset({".txt", ".text", ".rst"})
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
PDF_SUFFIXES = frozenset({".pdf"})
DOCX_SUFFIXES = frozenset({".docx"})
JSON_SUFFIXES = frozenset({".json", ".jsonl", ".ndjson"})
DOCUMENT_SUFFIXES = PLAIN_SUFFIXES | MARKDOWN_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES | DOCX_SUFFIXES
SUPPORTED_SUFFIXES = DOCUMENT_SUFFIXES | JSON_SUFFIXES


def extract(raw: bytes, *, suffix: str, name: str, source: str | None, limits: ReadLimits) -> Extracted:
    """The text and structure of one document file's bytes; InputError with a one-line reason
    when the file cannot be read. `source`: the file's path relative to the indexed root, which
    relative links are resolved from."""
    suffix = suffix.lower()
    # Imported here: a run that reads only text files does not load PDFium, lxml or python-docx.
    if suffix in PLAIN_SUFFIXES:
        from cuerag.ingest.formats.plain import extract_plain

        return extract_plain(raw, name=name, source=source)
    if suffix in MARKDOWN_SUFFIXES:
        from cuerag.ingest.formats.markdown import extract_markdown

        return extract_markdown(raw, name=name, source=source)
    if suffix in HTML_SUFFIXES:
        from cuerag.ingest.formats.html import extract_html

        return extract_html(raw, name=name, source=source)
    if suffix in PDF_SUFFIXES:
        from cuerag.ingest.formats.pdf import extract_pdf

        return extract_pdf(raw, name=name, source=source, limits=limits)
    if suffix in DOCX_SUFFIXES:
        from cuerag.ingest.formats.docx import extract_docx

        return extract_docx(raw, name=name, source=source, limits=limits)
    raise unsupported_format(name, suffix)


def unsupported_format(name: object | None, suffix: str) -> InputError:
    """The one refusal of a file whose suffix no extractor reads (a walk, a named file, a load);
    without a `name` for a report line that names the file already."""
    supported = ", ".join(sorted(SUPPORTED_SUFFIXES))
    reason = f"unsupported format {suffix or '(none)'!r}; supported: {supported}"
    return InputError(reason if name is None else f"{name}: {reason}")


__all__ = [
    "DOCUMENT_SUFFIXES",
    "JSON_SUFFIXES",
    "SUPPORTED_SUFFIXES",
    "ByteBudget",
    "Check",
    "DocumentStructure",
    "Extracted",
    "Link",
    "Page",
    "ReadLimits",
    "Section",
    "Span",
    "extract",
    "read_file_once",
    "unsupported_format",
]
