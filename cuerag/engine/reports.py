"""What the engine's corpus operations report: a corpus's size for listings, what a delete removed."""

from __future__ import annotations

from pydantic import BaseModel

from cuerag.index.report import ThemesReport


class DeleteReport(BaseModel):
    corpus: str
    documents_deleted: list[str]
    not_found: list[str]
    chunks_deleted: int
    units_removed: int
    entities_removed: int
    totals: dict[str, int]
    themes: ThemesReport | None = None


class CorpusInfo(BaseModel):
    name: str
    documents: int
    chunks: int
    units: int
    entities: int
