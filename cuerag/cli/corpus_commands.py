"""`cuerag corpora`, `stats`, `delete`, `drop` and `demo`: corpora as a whole."""

from __future__ import annotations

import json
from importlib import resources
from typing import Annotated

import typer
from rich.table import Table

from cuerag.cli.console import _CORPUS_HELP, _count, _fail, _progress, out
from cuerag.cli.context import SAMPLE_QUESTION, _engine, _with_models
from cuerag.cli.render import print_result
from cuerag.config import QIterParams
from cuerag.errors import CueRagError


def corpora(ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """List the corpora with their sizes."""
    engine = _engine(ctx)
    infos = [engine.info(name) for name in engine.corpora()]
    if as_json:
        out.print_json(json.dumps([i.model_dump() for i in infos]))
        return
    table = Table("corpus", "documents", "chunks", "units", "entities")
    for i in infos:
        table.add_row(i.name, str(i.documents), str(i.chunks), str(i.units), str(i.entities))
    out.print(table)


def stats(ctx: typer.Context, corpus: Annotated[str, typer.Option("--corpus", "-c", help=_CORPUS_HELP)]) -> None:
    """Show the graph sizes of one corpus, edges included."""
    try:
        sizes = _engine(ctx).sizes(corpus)
    except CueRagError as exc:
        raise _fail(exc) from exc
    out.print_json(json.dumps({"corpus": corpus, **sizes}))


def delete(
    ctx: typer.Context,
    doc_ids: Annotated[list[str], typer.Argument(help="Document ids to delete (the doc_id shown by query).")],
    corpus: Annotated[str, typer.Option("--corpus", "-c", help=_CORPUS_HELP)],
) -> None:
    """Delete documents from a corpus; units and entities nothing else supports go too."""
    try:
        report = _engine(ctx).delete_documents(corpus, doc_ids)
    except CueRagError as exc:
        raise _fail(exc) from exc
    out.print(
        f"deleted {_count(len(report.documents_deleted), 'document')} ({_count(report.chunks_deleted, 'chunk')}, "
        f"{_count(report.units_removed, 'unit')}, {_count(report.entities_removed, 'entity', 'entities')})"
        + (f"; not found: {', '.join(report.not_found)}" if report.not_found else ""),
        markup=False,
    )


def drop(
    ctx: typer.Context,
    corpus: Annotated[str, typer.Option("--corpus", "-c", help=_CORPUS_HELP)],
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: the corpus cannot be recovered.")] = False,
) -> None:
    """Delete a whole corpus (its three collections)."""
    if not yes:
        raise _fail(CueRagError(f"dropping {corpus!r} deletes it for good; add --yes to confirm"))
    try:
        _engine(ctx).drop_corpus(corpus)
    except CueRagError as exc:
        raise _fail(exc) from exc
    out.print(f"dropped corpus {corpus}", markup=False)


def demo(
    ctx: typer.Context,
    question: Annotated[str, typer.Option(help="The question to ask.")] = SAMPLE_QUESTION,
) -> None:
    """Index the bundled sample corpus and answer a multi-hop question, showing the trace."""
    engine = _with_models(_engine(ctx))
    sample = resources.files("cuerag") / "data" / "sample_corpus.json"
    with resources.as_file(sample) as path, _progress() as progress:
        report = engine.index_paths("sample", [path], progress=progress)
    out.print("sample corpus: " + ", ".join(f"{k} {v}" for k, v in report.totals.items()))
    result = engine.query("sample", question, params=QIterParams())
    print_result(result, show_trace=True)
