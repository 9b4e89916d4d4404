"""DOCX (python-docx): paragraphs and tables in reading order, `Heading N` and `Title` styles as
sections, hyperlinks with their anchor text, the title from the core properties.

A DOCX is a zip archive: its members' sizes are checked before anything is decompressed, so a
zip bomb is refused from its directory alone (python-docx reads no more than a member declares).
"""

from __future__ import annotations

import io
import re
import zipfile

import docx
from docx.document import Document as DocxDocument
from docx.opc.exceptions import OpcError
from docx.table import Table
from docx.text.hyperlink import Hyperlink
from docx.text.paragraph import Paragraph

from cuerag.errors import InputError
from cuerag.ingest.formats.builder import TextBuilder
from cuerag.ingest.formats.model import DocumentStructure, Extracted
from cuerag.ingest.formats.reading import ReadLimits
from cuerag.ingest.formats.targets import resolve_target

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def check_archive(raw: bytes, name: str, limits: ReadLimits) -> None:
    """Refuse an archive whose members would expand past the expansion ratio or the file limit."""
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            expanded = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise InputError(f"{name}: not a valid DOCX (the zip archive is truncated or corrupt: {exc})") from None
    ratio = expanded / max(len(raw), 1)
    if ratio > limits.max_expansion_ratio or expanded > limits.max_file_bytes:
        raise InputError(
            f"{name}: the archive would expand to {expanded:,} bytes ({ratio:.0f}x its size; limits "
            f"{limits.max_expansion_ratio:.0f}x and {limits.max_file_bytes:,} bytes): a zip bomb? refused"
        )


def extract_docx(raw: bytes, *, name: str, source: str | None, limits: ReadLimits) -> Extracted:
    check_archive(raw, name, limits)
    try:
        document = docx.Document(io.BytesIO(raw))
    except (OpcError, KeyError, ValueError, zipfile.BadZipFile, OSError) as exc:
        raise InputError(f"{name}: not a readable DOCX ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # lxml's XMLSyntaxError and the like: a damaged part
        raise InputError(f"{name}: a part of the DOCX is damaged ({type(exc).__name__}: {exc})") from None
    out = TextBuilder()
    title_style: str | None = None
    for block in _blocks(document):
        if isinstance(block, Table):
            for row in block.rows:
                out.block()
                for n, cell in enumerate(row.cells):
                    if n:
                        out.inline(" | ")
                    out.inline(cell.text)
            out.block()
            continue
        style = (block.style.name if block.style is not None else "") or ""
        heading = _HEADING_STYLE.match(style)
        if style.lower() == "title" and block.text.strip():
            title_style = title_style or block.text.strip()
            out.heading(1, block.text)
        elif heading:
            out.heading(int(heading.group(1)) + 1, block.text)  # below a Title-style heading
        else:
            out.block()
            _paragraph(out, block)
            out.block()
    body, sections, links = out.finish()
    if not body.strip():
        raise InputError(f"{name}: the DOCX holds no text")
    for link in links:
        link.doc_id = resolve_target(link.target, source)
    props = document.core_properties
    meta = {k: v for k, v in (("author", props.author), ("subject", props.subject), ("keywords", props.keywords)) if v}
    return Extracted(
        title=(props.title or "").strip() or title_style,
        text=body,
        structure=DocumentStructure(sections=sections, links=links, metadata=meta, format="docx"),
    )


def _blocks(document: DocxDocument) -> list[Paragraph | Table]:
    """Body paragraphs and tables in the order they appear."""
    body = document.element.body
    out: list[Paragraph | Table] = []
    for child in body.iterchildren():
        if child.tag == f"{_W}p":
            out.append(Paragraph(child, document))
        elif child.tag == f"{_W}tbl":
            out.append(Table(child, document))
    return out


def _paragraph(out: TextBuilder, paragraph: Paragraph) -> None:
    for item in paragraph.iter_inner_content():
        if isinstance(item, Hyperlink):
            start = out.pos
            out.inline(item.text)
            target = item.address + (f"#{item.fragment}" if item.fragment else "")
            if target:
                out.link(target, start)
        else:
            out.inline(item.text)
