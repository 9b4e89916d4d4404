"""Plain text (.txt, .rst, .text): the text as it is, no structure."""

from __future__ import annotations

from cuerag.ingest.formats.model import DocumentStructure, Extracted
from cuerag.ingest.formats.reading import decode_text


def extract_plain(raw: bytes, *, name: str, source: str | None) -> Extracted:
    return Extracted(text=decode_text(raw, name), structure=DocumentStructure(format="text"))
