"""`cuerag themes` and `cuerag global`: a corpus's theme hierarchy browsed, and a broad question
answered by theme (`cuerag.communities`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from cuerag.cli.console import _CORPUS_HELP, _count, _fail, _plain, _shown, out
from cuerag.cli.context import _engine
from cuerag.errors import CueRagError

if TYPE_CHECKING:  # the CLI imports no more than a command needs (its start-up time)
    from cuerag.communities.browse import ThemeDetail


def themes(
    ctx: typer.Context,
    corpus: Annotated[str, typer.Option("--corpus", "-c", help=_CORPUS_HELP)],
    theme: Annotated[
        str | None, typer.Option("--theme", "-t", help="Open this theme: its children, or a leaf's documents.")
    ] = None,
    level: Annotated[int, typer.Option(help="Level listed without --theme (0: the broadest).")] = 0,
    offset: Annotated[int, typer.Option(help="Start of the page (a page's next offset).")] = 0,
    limit: Annotated[int, typer.Option(help="Themes per page (1-100).")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print the listing as JSON.")] = False,
) -> None:
    """List a corpus's themes at a level, largest first, or open one with its report and children."""
    try:
        listing = _engine(ctx).themes(corpus, theme_id=theme, level=level, offset=offset, limit=limit)
    except CueRagError as exc:
        raise _fail(exc) from exc
    if as_json:
        out.print_json(listing.model_dump_json())
        return
    if (t := listing.theme) is not None:
        out.print(
            f"{t.theme_id} (level {t.level}, {_count(t.documents_total, 'document')}): {_plain(t.title)}", markup=False
        )
        if t.summary:
            out.print(_plain(t.summary), markup=False, highlight=False)
        out.print(_plain(f"entities: {', '.join(t.entities)}"), markup=False)
        for e in t.evidence:
            out.print(_plain(f"- {e.text} [{e.doc_id}]"), markup=False, highlight=False)
        if not listing.total:  # a leaf: what it holds are documents, not sub-themes (no empty table)
            print_members(t)
            return
    table = Table("theme_id", "level", "documents", "children", "title")
    for s in listing.themes:
        title = _shown(s.title) if not s.summary else f"{_shown(s.title)}\n[dim]{_shown(s.summary)}[/dim]"
        table.add_row(s.theme_id, str(s.level), str(s.documents), str(s.children), title)
    out.print(table)
    more = f"; next page: --offset {listing.next_offset}" if listing.next_offset is not None else ""
    out.print(
        f"{len(listing.themes)} of {_count(listing.total, 'theme')}, {_count(listing.levels, 'level')}{more}",
        markup=False,
    )


def print_members(theme: ThemeDetail) -> None:
    """A leaf theme's member documents, one a line (the first DOCUMENTS_SHOWN, the count says how many)."""
    out.print(f"no sub-themes; its {_count(theme.documents_total, 'document')}:", markup=False)
    for doc_id in theme.documents:
        out.print(f"  {_plain(doc_id)}", markup=False, highlight=False)
    if theme.documents_total > len(theme.documents):
        out.print(f"  … and {theme.documents_total - len(theme.documents)} more", markup=False)


def global_search(
    ctx: typer.Context,
    corpus: Annotated[str, typer.Option("--corpus", "-c", help=_CORPUS_HELP)],
    question: Annotated[str, typer.Argument(help="A broad question; empty: the corpus's top themes.")] = "",
    budget: Annotated[int, typer.Option("--budget", help="Most tokens of statements returned.")] = 2000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Answer a broad question by theme: cited statements grouped by community, within a token budget."""
    try:
        result = _engine(ctx).global_search(corpus, question, budget_tokens=budget)
    except CueRagError as exc:
        raise _fail(exc) from exc
    if as_json:
        out.print_json(result.model_dump_json())
        return
    for group in result.groups:
        out.print(f"## {_plain(group.title)} ({group.theme_id}, {_count(group.documents, 'document')})", markup=False)
        if group.summary:
            out.print(_plain(group.summary), markup=False, highlight=False)
        for s in group.statements:
            out.print(_plain(f"- {s.text} [{s.doc_id}]"), markup=False, highlight=False)
    out.print(
        f"{result.documents_cited} of {_count(result.corpus_documents, 'document')} cited ({result.coverage:.0%}), "
        f"themes hold {result.theme_coverage:.0%}; {_count(result.tokens, 'token')}; {result.elapsed_ms:.0f} ms",
        markup=False,
    )
