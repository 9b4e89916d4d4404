"""The text channel of the theme tools (`global_search`, `themes`): statements grouped under their
themes, readable by a model that sees only the text (claude.ai and others; the structured content
has the same facts as JSON). A JSON dump there made the model read every id and field name for a
few sentences (a new user's report, issue 32)."""

from __future__ import annotations

from cuerag.communities.browse import ThemeDetail, ThemeListing
from cuerag.communities.theme_search import GlobalSearchResult
from cuerag.text.counts import counted


def global_search_text(result: GlobalSearchResult) -> str:
    head = (
        f"global search on {result.corpus} for {result.query!r}: {counted(len(result.groups), 'theme')}, "
        f"{counted(result.documents_cited, 'document')} cited of {result.corpus_documents} "
        f"({result.coverage:.0%}; the themes hold {result.theme_coverage:.0%}); "
        f"{result.tokens} of {result.budget_tokens} tokens, {result.elapsed_ms:.0f} ms"
    )
    lines = [head]
    if result.overview:
        lines.append("an overview question: the corpus's largest themes, each with what it says")
    for group in result.groups:
        lines += [
            "",
            f"## {group.title} ({group.theme_id}, level {group.level}, {counted(group.documents, 'document')})",
        ]
        if group.summary:
            lines.append(group.summary)
        lines += [
            f"- {s.text} [{s.title or s.doc_id}; doc_id {s.doc_id}, chunk {s.chunk_id}]" for s in group.statements
        ]
    if not result.groups:
        lines += ["", "no theme of this corpus matches; try q_iter for a specific question"]
    return "\n".join(lines)


def _detail_lines(theme: ThemeDetail) -> list[str]:
    parent = f", under {theme.parent}" if theme.parent else ""
    lines = [f"## {theme.title} ({theme.theme_id}, level {theme.level}{parent})"]
    if theme.summary:
        lines.append(theme.summary)
    if theme.terms:
        lines.append(f"terms: {', '.join(theme.terms)}")
    if theme.entities:
        lines.append(f"entities: {', '.join(theme.entities)}")
    lines += [f"- {e.text} [doc_id {e.doc_id}, chunk {e.chunk_id}]" for e in theme.evidence]
    more = theme.documents_total - len(theme.documents)
    lines.append(
        f"{counted(theme.documents_total, 'document')}: {', '.join(theme.documents)}"
        + (f" (+{more} more)" if more else "")
    )
    return lines


def themes_text(listing: ThemeListing) -> str:
    where = f"under {listing.theme.theme_id}" if listing.theme is not None else "of the corpus"
    levels = counted(listing.levels, "level")
    head = f"themes of {listing.corpus} ({levels}): {len(listing.themes)} of {listing.total} {where}"
    if listing.next_offset is not None:
        head += f"; next page: offset={listing.next_offset}"
    lines = [head]
    if listing.theme is not None:
        lines += ["", *_detail_lines(listing.theme)]
        if not listing.themes:
            lines.append("no sub-themes")
    if listing.themes:
        lines.append("")
    for t in listing.themes:
        summary = f": {t.summary}" if t.summary else ""
        lines.append(
            f"- {t.theme_id} {t.title} (level {t.level}, {counted(t.documents, 'document')}, "
            f"{counted(t.children, 'sub-theme')}){summary}"
        )
    return "\n".join(lines)
