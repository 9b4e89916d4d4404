"""Browsing a corpus's themes: the communities at a level, or under a theme, a page at a time, and
one theme opened (its report: title, terms, entities, evidence cited to chunk and document, member
documents, parent and children). What the `themes` tool and resources show an agent."""

from __future__ import annotations

import difflib

from pydantic import BaseModel

from cuerag.communities.hierarchy import Community, Hierarchy
from cuerag.communities.reports import Report
from cuerag.errors import ParameterError

MAX_THEME_PAGE = 100
DOCUMENTS_SHOWN = 50  # member documents listed when a theme is opened (the count says how many)


class ThemeSummary(BaseModel):
    theme_id: str
    title: str  # the LLM's title when one wrote it, else the extractive one
    level: int
    documents: int
    children: int
    summary: str | None = None  # written by the LLM (cuerag.communities.summaries); None without one


class ThemeEvidence(BaseModel):
    text: str
    unit_id: str
    chunk_id: str
    doc_id: str


class ThemeDetail(BaseModel):
    theme_id: str
    title: str  # as in ThemeSummary
    level: int
    summary: str | None = None
    terms: list[str]
    entities: list[str]
    evidence: list[ThemeEvidence]
    documents: list[str]  # the first DOCUMENTS_SHOWN member documents
    documents_total: int
    parent: str | None


class ThemeListing(BaseModel):
    corpus: str
    levels: int  # levels of the hierarchy: 0 (broadest) .. levels-1
    theme: ThemeDetail | None = None  # the theme opened; `themes` are then its children
    themes: list[ThemeSummary]
    total: int  # themes listed over all pages
    next_offset: int | None = None  # pass as offset for the next page; None on the last


def _summary(community: Community, report: Report) -> ThemeSummary:
    return ThemeSummary(
        theme_id=community.id,
        title=report.shown_title,
        level=community.level,
        documents=community.size,
        children=len(community.children),
        summary=report.llm_summary,
    )


def _detail(community: Community, report: Report) -> ThemeDetail:
    return ThemeDetail(
        theme_id=community.id,
        title=report.shown_title,
        level=community.level,
        summary=report.llm_summary,
        terms=report.terms,
        entities=report.entities,
        evidence=[
            ThemeEvidence(text=e.text, unit_id=e.unit_id, chunk_id=e.chunk_id, doc_id=e.doc_id) for e in report.evidence
        ],
        documents=report.documents[:DOCUMENTS_SHOWN],
        documents_total=len(report.documents),
        parent=community.parent,
    )


def list_themes(
    corpus: str,
    hierarchy: Hierarchy,
    reports: dict[str, Report],
    *,
    theme_id: str | None = None,
    level: int = 0,
    offset: int = 0,
    limit: int = 20,
) -> ThemeListing:
    """The themes at `level`, largest first, or, with `theme_id`, that theme opened and its
    children; a page of `limit` from `offset`. An unknown id or a level the hierarchy lacks is a
    ParameterError that says what exists."""
    if not 1 <= limit <= MAX_THEME_PAGE:
        raise ParameterError(f"limit must be 1..{MAX_THEME_PAGE}, not {limit}")
    if offset < 0:
        raise ParameterError(f"offset must be 0 or more, not {offset}")
    levels = hierarchy.depth
    detail = None
    if theme_id:
        community = hierarchy.communities.get(theme_id)
        if community is None:
            close = difflib.get_close_matches(theme_id, list(hierarchy.communities), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise ParameterError(
                f"no theme {theme_id!r} in corpus {corpus!r}{hint}; list the themes (no theme_id) to see their ids"
            )
        detail = _detail(community, reports[theme_id])
        listed = [hierarchy.communities[c] for c in community.children]
    else:
        if not 0 <= level < max(levels, 1):
            raise ParameterError(
                f"corpus {corpus!r} has no theme level {level}: its levels are 0..{max(levels - 1, 0)} (0 the broadest)"
            )
        listed = hierarchy.level(level)
    listed.sort(key=lambda c: (-c.size, c.id))
    page = listed[offset : offset + limit]
    return ThemeListing(
        corpus=corpus,
        levels=levels,
        theme=detail,
        themes=[_summary(c, reports[c.id]) for c in page],
        total=len(listed),
        next_offset=offset + limit if offset + limit < len(listed) else None,
    )
