"""`cuerag index` and `cuerag watch`: files and folders into a corpus, once or kept in sync."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cuerag.cli.console import _fail, _progress, _shown, err, out
from cuerag.cli.context import _engine, _override
from cuerag.cli.render import print_report
from cuerag.errors import CueRagError
from cuerag.graph.schema import validate_corpus_name
from cuerag.ingest.formats import SUPPORTED_SUFFIXES

if TYPE_CHECKING:
    from cuerag.index.report import IndexReport
    from cuerag.ingest.folders import WalkRules

_Globs = Annotated[list[str] | None, typer.Option(help="Glob (gitignore syntax, relative to the folder); repeatable.")]


def _walk_rules(include: list[str] | None, exclude: list[str] | None, hidden: bool) -> WalkRules:
    # The folder walk's code (pathspec, re2) is imported by the commands that walk, not by every
    # command: a query answered by a running server starts without it.
    from cuerag.ingest.folders import WalkRules

    return WalkRules(include=tuple(include or ()), exclude=tuple(exclude or ()), hidden=hidden)


def index(
    ctx: typer.Context,
    paths: Annotated[
        list[Path],
        typer.Argument(
            help=f"Files or folders; a folder gives its {', '.join(sorted(SUPPORTED_SUFFIXES))} files.",
            show_default=False,
        ),
    ],
    corpus: Annotated[str, typer.Option("--corpus", "-c", help="Corpus to add to (created if new).")],
    alpha: Annotated[
        float | None,
        typer.Option(help="Share of tokens whose chunks the LLM turns into units, 0..1 (default 0; env CUERAG_ALPHA)."),
    ] = None,
    selection: Annotated[
        str | None, typer.Option(help="Chunk value for the knapsack: bleu, cosine or random (env CUERAG_SELECTION).")
    ] = None,
    sync: Annotated[
        bool, typer.Option("--sync", help="Also delete the documents of files gone from the folders given.")
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Stop at the first file that cannot be read, writing nothing.")
    ] = False,
    include: _Globs = None,
    exclude: _Globs = None,
    hidden: Annotated[bool, typer.Option("--hidden", help="Walk dot-files and dot-folders too.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    full_report: Annotated[
        bool,
        typer.Option(
            "--full-report",
            help="List every file in the report (else the first 100 of each kind, unchanged ones counted only).",
        ),
    ] = False,
) -> None:
    """Index files and folders into a corpus.

    A file's id is its path under the folder given (its own folder for a file), so an edited file
    replaces its earlier version and an unchanged one is skipped. A file that cannot be read is
    reported and the rest indexed (--strict: stop, write nothing). With --alpha above 0, an LLM
    writes the units of the chunks a knapsack selects (CUE-RAG's hybrid extraction); the other
    chunks are split into sentences."""
    try:
        validate_corpus_name(corpus)  # before the models load: a typo costs no wait
    except CueRagError as exc:
        raise _fail(exc) from exc
    _override(ctx, alpha=alpha, selection=selection)
    rules = _walk_rules(include, exclude, hidden)
    engine = _engine(ctx)
    try:
        # The models load on first use, after every file is walked and read: a bad folder costs no wait.
        with _progress() as progress:
            report = engine.index_paths(
                corpus, paths, sync=sync, strict=strict, rules=rules, progress=progress, full_report=full_report
            )
    except CueRagError as exc:
        raise _fail(exc) from exc
    if as_json:
        out.print_json(report.model_dump_json())
        return
    print_report(report)


def watch(
    ctx: typer.Context,
    folder: Annotated[Path, typer.Argument(help="The folder to keep in sync.", file_okay=False, exists=True)],
    corpus: Annotated[str, typer.Option("--corpus", "-c", help="Corpus to keep in sync (created if new).")],
    include: _Globs = None,
    exclude: _Globs = None,
    hidden: Annotated[bool, typer.Option("--hidden", help="Walk dot-files and dot-folders too.")] = False,
    debounce_ms: Annotated[int, typer.Option(help="Quiet time that ends a burst of changes.", min=50)] = 500,
) -> None:
    """Keep a corpus in sync with a folder while this runs.

    A sync now, then one after every burst of changes (as `index --sync`). Ctrl-C stops it; the
    corpus is left as the last sync made it."""
    from cuerag.engine.watch import watch_folder

    try:
        validate_corpus_name(corpus)
    except CueRagError as exc:
        raise _fail(exc) from exc
    rules = _walk_rules(include, exclude, hidden)
    engine = _engine(ctx, standby=True)
    err.print(f"watching {_shown(str(folder))} for corpus {corpus} (Ctrl-C stops)")
    # A sync cut short by Ctrl-C is safe to cut: the next run finishes it (see cuerag.index.pipeline).
    told: dict[str, str] = {}

    def report(done: IndexReport) -> None:
        nonlocal told
        print_report(done, told=told)
        told = {f.path: f.reason for f in [*done.failed, *done.warnings]}

    with contextlib.suppress(KeyboardInterrupt):
        watch_folder(engine, corpus, folder, rules=rules, on_report=report, debounce_ms=debounce_ms)
    err.print("stopped")
