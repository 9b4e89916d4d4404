"""The `cuerag` command line: index, watch, query, corpora, stats, demo, eval and bench.

Results go to stdout (plain or `--json`); progress bars and logs go to stderr.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console, ConsoleDimensions
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cuerag.citations import Citation
from cuerag.cli_options import OptionsAnywhere
from cuerag.config import QIterParams, Settings, param_help
from cuerag.engine import CueRag, make_params, validate_corpus_name
from cuerag.entities import same_entity
from cuerag.errors import CueRagError
from cuerag.explain import ExplainedResult, GraphTitles, explain, explain_hit, hop_label
from cuerag.folders import WalkRules
from cuerag.formats import SUPPORTED_SUFFIXES
from cuerag.index import IndexReport
from cuerag.index import Progress as IndexProgress
from cuerag.progress_log import ProgressLog
from cuerag.redact import redact_urls_in
from cuerag.results import METHODS, Anchor, TitleStep
from cuerag.subset import CLI_FLAGS, make_filter

app = typer.Typer(
    cls=OptionsAnywhere,
    add_completion=False,
    no_args_is_help=True,
    help="CUE-RAG multi-hop retrieval. Global options go before or after the command.",
)


class _Console(Console):
    """A console that wraps lines only on a terminal. Written to a pipe or a file, a line stays
    whole, as grep and a pager expect (rich would cut it at 80 columns, or at the width of
    whatever terminal the command was started from)."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        return size if self.is_terminal else ConsoleDimensions(_UNWRAPPED, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


_UNWRAPPED = 1_000_000  # columns: wider than any line the commands print

out = _Console()
err = _Console(stderr=True)

_CORPUS_HELP = "The corpus (see `cuerag corpora`)."
SAMPLE_QUESTION = "When did the 1979-80 European Cup winner win the FA Cup?"


def _settings(ctx: typer.Context) -> Settings:
    settings: Settings = ctx.obj["settings"]
    return settings


def _engine(ctx: typer.Context) -> CueRag:
    """The engine, with its store open and no model loaded: commands that only read or delete
    from the store answer at once. `_with_models` loads them where a command needs them."""
    if "engine" not in ctx.obj:
        try:
            ctx.obj["engine"] = CueRag(_settings(ctx))
        except OSError as exc:  # a data directory that cannot be created, read or locked
            raise _fail(CueRagError(_os_message(exc))) from exc
        except CueRagError as exc:  # the index is open in another process, say
            raise _fail(exc) from exc
        # Release the store (and its directory lock) when the command ends.
        ctx.call_on_close(ctx.obj["engine"].close)
    engine: CueRag = ctx.obj["engine"]
    return engine


def _with_models(engine: CueRag) -> CueRag:
    """Load the models now, under a status line, once everything that can fail first has been
    checked (so an error exit never waits for them)."""
    if not engine.models_loaded:
        with err.status("loading models…"):
            _ = engine.models
    return engine


@app.callback()
def main_options(
    ctx: typer.Context,
    data_dir: Annotated[Path | None, typer.Option(help="Where indexes live (env CUERAG_DATA_DIR).")] = None,
    read_only: Annotated[
        bool | None, typer.Option("--read-only", help="Open the index without writing (env CUERAG_READ_ONLY).")
    ] = None,
    store: Annotated[str | None, typer.Option(help="Embedded engine: edge or local (env CUERAG_STORE).")] = None,
    qdrant_url: Annotated[str | None, typer.Option(help="Qdrant server URL (env CUERAG_QDRANT_URL).")] = None,
    embedder: Annotated[str | None, typer.Option(help="Embedding model (env CUERAG_EMBEDDER).")] = None,
    reranker: Annotated[str | None, typer.Option(help="Reranker (env CUERAG_RERANKER).")] = None,
    llm_provider: Annotated[
        str | None, typer.Option(help="none, openai (any compatible endpoint) or anthropic (env CUERAG_LLM_PROVIDER).")
    ] = None,
    llm_model: Annotated[str | None, typer.Option(help="LLM model name (env CUERAG_LLM_MODEL).")] = None,
    llm_base_url: Annotated[str | None, typer.Option(help="LLM endpoint URL (env CUERAG_LLM_BASE_URL).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log to stderr.")] = False,
) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, stream=sys.stderr)
    overrides: dict[str, Any] = {
        k: v
        for k, v in {
            "data_dir": data_dir,
            "read_only": read_only,
            "store": store,
            "qdrant_url": qdrant_url,
            "embedder": embedder,
            "reranker": reranker,
            "llm_provider": llm_provider,
            "llm_model": llm_model,
            "llm_base_url": llm_base_url,
        }.items()
        if v is not None
    }
    try:
        ctx.obj = {"settings": Settings(**overrides)}
    except ValueError as exc:
        err.print(f"[red]error:[/red] invalid configuration: {escape(redact_urls_in(str(exc)))}")
        raise typer.Exit(2) from exc


class _Bars:
    """A rich progress bar per indexing stage, on stderr."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._tasks: dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage not in self._tasks:
            self._tasks[stage] = self._progress.add_task(stage, total=total)
        self._progress.update(self._tasks[stage], completed=done, total=total)


@contextmanager
def _progress() -> Iterator[IndexProgress]:
    """Bars on a terminal; elsewhere (a CI log, a pipe) rate-limited log lines, since bars would
    draw nothing until the run ends."""
    if not err.is_terminal:
        yield ProgressLog(write=lambda line: err.print(line, markup=False, highlight=False))
        return
    bars = Progress(
        TextColumn("{task.description:<15}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
    )
    with bars:
        yield _Bars(bars)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _count(n: int, noun: str) -> str:
    """ "1 document", "2 documents"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _shown(text: str) -> str:
    """Indexed text for the terminal: rich markup escaped, and control characters written as
    \\xNN so that a document cannot move the cursor, clear the screen or retitle the window."""
    return escape(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text))


def _fail(exc: CueRagError) -> typer.Exit:
    err.print(f"[red]error:[/red] {escape(exc.for_cli())}")
    return typer.Exit(1)


_Globs = Annotated[list[str] | None, typer.Option(help="Glob (gitignore syntax, relative to the folder); repeatable.")]


@app.command()
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
    rules = WalkRules(include=tuple(include or ()), exclude=tuple(exclude or ()), hidden=hidden)
    engine = _engine(ctx)
    try:
        # The models load on first use, after every file is walked and read: a bad folder costs no wait.
        with _progress() as progress:
            report = engine.index_paths(corpus, paths, sync=sync, strict=strict, rules=rules, progress=progress)
    except CueRagError as exc:
        raise _fail(exc) from exc
    if as_json:
        out.print_json(report.model_dump_json())
        return
    print_report(report)


def print_report(report: IndexReport, *, told: Mapping[str, str] | None = None) -> None:
    """An index report for a person: one line per file that changed or failed, then the counts.
    `told` (path → reason): failures already shown, as by a watch's last sync, are named in one
    line without their reasons rather than shown again."""
    for label, files in (("added", report.added), ("changed", report.changed), ("removed", report.removed)):
        for f in files:
            out.print(f"{label:>8} {_shown(f.path)}")
    told = told or {}
    again = [f for f in report.failed if told.get(f.path) == f.reason]
    for f in report.failed:
        if told.get(f.path) != f.reason:
            out.print(f"[red]  failed[/red] {_shown(f.path)}: {_shown(f.reason)}")
    if again:
        names = ", ".join(_shown(f.path) for f in again)
        out.print(f"[red]  failed[/red] again, for the reasons given when they first failed: {names}")
    for f in report.warnings:
        if told.get(f.path) != f.reason:
            out.print(f"[yellow] warning[/yellow] {_shown(f.path)}: {_shown(f.reason)}")
    if any((report.added, report.changed, report.removed, report.skipped, report.failed)):
        out.print(
            f"files: {len(report.added)} added, {len(report.changed)} changed, {len(report.removed)} removed, "
            f"{len(report.skipped)} unchanged, {len(report.failed)} failed"
        )
    if report.passed_over:
        kinds = ", ".join(f"{n} {suffix or '(no suffix)'}" for suffix, n in sorted(report.passed_over.items()))
        out.print(f"passed over, in formats not read: {kinds}")
    out.print(
        f"corpus [bold]{report.corpus}[/bold]: {_count(report.documents_added, 'document')} added, "
        f"{report.documents_unchanged} unchanged, {report.documents_replaced} replaced, "
        f"{report.documents_removed} removed; "
        f"{report.chunks_added} chunks, {report.units_added} units, {report.entities_added} entities added "
        f"in {report.elapsed_seconds:.1f}s"
    )
    if report.chunks_llm or report.chunks_fallback:
        out.print(f"LLM units for {report.chunks_llm} chunks; {report.chunks_fallback} fell back to sentences")
    for stage, usage in report.llm_usage.items():
        out.print(
            f"LLM {stage}: {usage.calls} calls ({usage.cached_calls} from cache), "
            f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens"
        )
    if report.embedder_backend:
        out.print(
            f"embedder: {report.embedder_backend} {report.embedder_precision} ({report.embedder_precision_reason})",
            markup=False,
        )
    out.print("totals: " + ", ".join(f"{k} {v}" for k, v in report.totals.items()))


@app.command()
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
    from cuerag.watch import watch_folder

    try:
        validate_corpus_name(corpus)
    except CueRagError as exc:
        raise _fail(exc) from exc
    rules = WalkRules(include=tuple(include or ()), exclude=tuple(exclude or ()), hidden=hidden)
    engine = _engine(ctx)
    err.print(f"watching {_shown(str(folder))} for corpus {corpus} (Ctrl-C stops)")
    # A sync cut short by Ctrl-C is safe to cut: the next run finishes it (see cuerag.index).
    told: dict[str, str] = {}

    def report(done: IndexReport) -> None:
        nonlocal told
        print_report(done, told=told)
        told = {f.path: f.reason for f in [*done.failed, *done.warnings]}

    with contextlib.suppress(KeyboardInterrupt):
        watch_folder(engine, corpus, folder, rules=rules, on_report=report, debounce_ms=debounce_ms)
    err.print("stopped")


def _override(ctx: typer.Context, **values: object) -> None:
    """Command options that are settings: applied before the engine exists, validated like the rest."""
    given = {k: v for k, v in values.items() if v is not None}
    if not given:
        return
    try:
        ctx.obj["settings"] = Settings(**{**_settings(ctx).model_dump(), **given})
    except ValueError as exc:
        err.print(f"[red]error:[/red] invalid option: {escape(str(exc))}")
        raise typer.Exit(2) from exc


_Docs = Annotated[list[str] | None, typer.Option(CLI_FLAGS["doc_ids"], help="Only this document id; repeatable.")]
_Prefix = Annotated[
    str | None, typer.Option(CLI_FLAGS["path_prefix"], help="Only documents whose source path starts so.")
]
_Glob = Annotated[
    str | None, typer.Option(CLI_FLAGS["path_glob"], help="Only documents whose source path matches (fnmatch).")
]
_Tags = Annotated[
    list[str] | None, typer.Option(CLI_FLAGS["tags"], help="Only documents tagged so (front matter); repeatable.")
]


@app.command()
def query(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The question to answer.", show_default=False)],
    corpus: Annotated[str, typer.Option("--corpus", "-c", help=_CORPUS_HELP)],
    method: Annotated[str, typer.Option(help="qiter, dense, bm25, hybrid or ketrag.")] = "qiter",
    k: Annotated[int | None, typer.Option("--k", help=param_help("k"))] = None,
    depth: Annotated[int | None, typer.Option("--depth", help=param_help("depth"))] = None,
    beam: Annotated[int | None, typer.Option("--beam", help=param_help("beam"))] = None,
    top_n: Annotated[int | None, typer.Option("--top-n", help=param_help("top_n"))] = None,
    knowledge_anchoring: Annotated[bool | None, typer.Option(help=param_help("knowledge_anchoring"))] = None,
    spreading_activation: Annotated[bool | None, typer.Option(help=param_help("spreading_activation"))] = None,
    query_update: Annotated[bool | None, typer.Option(help=param_help("query_update"))] = None,
    query_titles: Annotated[bool | None, typer.Option(help=param_help("query_titles"))] = None,
    title_links: Annotated[int | None, typer.Option("--title-links", help=param_help("title_links"))] = None,
    entity_links: Annotated[int | None, typer.Option("--entity-links", help=param_help("entity_links"))] = None,
    link_units: Annotated[int | None, typer.Option("--link-units", help=param_help("link_units"))] = None,
    link_hops: Annotated[bool | None, typer.Option(help=param_help("link_hops"))] = None,
    llm_entities: Annotated[bool, typer.Option(help="The LLM reads the question's entities (else NER).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    trace: Annotated[bool, typer.Option(help="Show the Q-Iter trace.")] = True,
    doc: _Docs = None,
    prefix: _Prefix = None,
    glob: _Glob = None,
    tag: _Tags = None,
) -> None:
    """Retrieve the chunks that answer a question, with the path that led to them.

    --doc, --prefix, --glob and --tag limit the search (and the graph walk) to the documents that
    match them all."""
    try:
        params = make_params(
            k=k,
            depth=depth,
            beam=beam,
            top_n=top_n,
            knowledge_anchoring=knowledge_anchoring,
            spreading_activation=spreading_activation,
            query_update=query_update,
            query_titles=query_titles,
            title_links=title_links,
            entity_links=entity_links,
            link_units=link_units,
            link_hops=link_hops,
        )
        # The models load inside, once the corpus, the method and the question have been checked.
        result = _engine(ctx).query(
            corpus,
            question,
            params=params,
            method=method,  # type: ignore[arg-type]
            llm_entities=llm_entities,
            filter=make_filter(doc_ids=doc, path_prefix=prefix, path_glob=glob, tags=tag),
        )
    except CueRagError as exc:
        raise _fail(exc) from exc
    explained = explain(result, GraphTitles(_engine(ctx).graph(corpus)))
    if as_json:
        out.print_json(explained.model_dump_json())
    else:
        print_result(explained, show_trace=trace)


@app.command()
def answer(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The question to answer.", show_default=False)],
    corpus: Annotated[str, typer.Option("--corpus", "-c", help=_CORPUS_HELP)],
    method: Annotated[str, typer.Option(help="qiter, dense, bm25, hybrid or ketrag.")] = "qiter",
    top_n: Annotated[int | None, typer.Option("--top-n", help="Chunks given to the LLM (default 5).")] = None,
    llm_entities: Annotated[bool, typer.Option(help="The LLM reads the question's entities (else NER).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Retrieve, then have the configured LLM answer from the retrieved chunks."""
    try:
        params = make_params(top_n=top_n)
        result = _engine(ctx).answer(
            corpus,
            question,
            params=params,
            method=method,  # type: ignore[arg-type]
            llm_entities=llm_entities,
        )
    except CueRagError as exc:
        raise _fail(exc) from exc
    if as_json:
        out.print_json(result.model_dump_json())
        return
    out.print(f"[bold]{_shown(result.answer) or '(no answer)'}[/bold]")
    titles = GraphTitles(_engine(ctx).graph(corpus))
    for rank, hit in enumerate(result.chunks, start=1):
        why = explain_hit(hit, result, titles).text
        out.print(f"  [{rank}] {_shown(hit.title)} ({_shown(hit.doc_id)}) [dim]— {_shown(why)}[/dim]")
    tokens = ", ".join(f"{k} {u.prompt_tokens}+{u.completion_tokens}" for k, u in result.llm_usage.items())
    out.print(f"[dim]{result.elapsed_ms:.0f} ms; LLM tokens (prompt+completion): {tokens}[/dim]")


def print_result(result: ExplainedResult, *, show_trace: bool) -> None:
    table = Table(title=f"{result.method} · {_shown(result.query)}", show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("chunk, and why it is here")
    for rank, hit in enumerate(result.chunks, start=1):
        text = hit.text if len(hit.text) < 300 else hit.text[:297] + "…"
        label = (
            f"[bold]{_shown(hit.title)}[/bold] ({_shown(hit.doc_id)})\n{_shown(text)}\n"
            f"[italic]why: {_shown(hit.why.text)}[/italic]"
        )
        if hit.citation is not None:
            label += f"\n[dim]{_shown(cite_line(hit.citation))}[/dim]"
        table.add_row(str(rank), f"{hit.score:.3f}", label)
    out.print(table)
    if result.note:
        out.print(_shown(result.note))
    if show_trace and result.trace is not None:
        t = result.trace
        out.print(f"[bold]query entities[/bold]: {_shown(', '.join(t.query_entities)) or '—'}")
        anchors = dict.fromkeys(_anchor_label(a) for a in t.anchors)
        out.print(f"[bold]anchors[/bold]: {_shown(', '.join(anchors)) or '—'}")
        for d in t.depths:
            out.print(f"[bold]depth {d.depth}[/bold] — {d.candidates} candidate paths, kept {len(d.paths)}")
            for p in d.paths:
                kinds = p.via_kinds or ["entity"] * len(p.via_entities)
                steps = " → ".join(
                    _shown(f"[{hop_label(kind, via)}] {text}")
                    for via, kind, text in zip(p.via_entities, kinds, p.unit_texts, strict=True)
                )
                out.print(f"  {p.score:.3f}  {steps}")
        titles = {h.chunk_id: h.title for h in result.chunks}
        if t.title_steps:
            out.print(f"[bold]links[/bold] — {len(t.title_steps)} in the final rerank")
        for step in t.title_steps:
            out.print(f"  {step.score:.3f}  {_shown(_link_line(step, titles))}")
    out.print(f"[dim]{result.elapsed_ms:.0f} ms[/dim]")


def _anchor_label(anchor: Anchor) -> str:
    """Where an anchor came from: the question's mention it was linked to (shown when the entity's
    name differs from it), or a unit near the question."""
    if anchor.source == "unit":
        return f"{anchor.name} (nearest unit)"
    if same_entity(anchor.name, anchor.mention):
        return f"{anchor.name} (question)"
    return f"{anchor.name} (near the question's “{anchor.mention}”)"


def _link_line(step: TitleStep, titles: dict[str, str]) -> str:
    """A link step of the final rerank on one line: which passage named or shared what, with the
    weight its specificity gave it. Passages not returned are shown by chunk id."""
    source = titles.get(step.from_chunk_id or "", step.from_chunk_id or "")
    weight = f"(specificity {step.specificity:.2f})"
    if step.kind == "named_in_query":
        return f"named in the question: {step.title} {weight}"
    if step.kind == "entity_link":
        return f"entity link: {source} → {step.title} via “{step.entity}” {weight}"
    return f"title link: {source} → {step.title} {weight}"


def cite_line(citation: Citation) -> str:
    """A hit's citation on one line: file, pages, section, span, and the documents it links to."""
    parts = [citation.source]
    if citation.pages:
        first, last = citation.pages[0], citation.pages[-1]
        parts.append(f"p. {first}" if first == last else f"pp. {first}-{last}")
    if citation.heading:
        parts.append(f"§ {citation.heading}")
    if citation.start is not None:
        parts.append(f"chars {citation.start}-{citation.end}")
    linked = list(dict.fromkeys(link.doc_id for link in citation.links if link.doc_id))
    if linked:
        parts.append("links to " + ", ".join(linked[:5]) + (" …" if len(linked) > 5 else ""))
    return " · ".join(parts)


@app.command()
def read(
    ctx: typer.Context,
    corpus: Annotated[str, typer.Option("--corpus", "-c")],
    doc_id: Annotated[str | None, typer.Argument(help="Document id (a hit's doc_id).")] = None,
    chunk: Annotated[str | None, typer.Option("--chunk", help="Show the text around this chunk id.")] = None,
    start: Annotated[int, typer.Option(help="Character offset to read from.")] = 0,
    max_chars: Annotated[int, typer.Option("--max-chars", help="Most characters shown.")] = 20_000,
    context: Annotated[int, typer.Option(help="Characters either side of --chunk.")] = 1_000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Read a document as it was extracted, whole or around one of its chunks."""
    try:
        if doc_id is None and chunk is None:
            raise CueRagError("give a document id, or --chunk with a chunk id")
        doc = _engine(ctx).read_document(
            corpus, doc_id, chunk_id=chunk, start=start, max_chars=max_chars, context=context
        )
    except CueRagError as exc:
        raise _fail(exc) from exc
    if as_json:
        out.print_json(doc.model_dump_json())
        return
    pages = f", pages {doc.pages[0]}-{doc.pages[-1]}" if doc.pages else ""
    out.print(f"{doc.title} ({doc.source}), characters {doc.start}-{doc.end} of {doc.total_chars}{pages}", markup=False)
    out.print(doc.text, markup=False, highlight=False)
    if doc.end < doc.total_chars:  # said at the end too, where a reader of a long text looks
        err.print(f"… {doc.total_chars - doc.end} more characters; read on with --start {doc.end}", markup=False)


@app.command()
def documents(
    ctx: typer.Context,
    corpus: Annotated[str, typer.Option("--corpus", "-c", help=_CORPUS_HELP)],
    prefix: _Prefix = None,
    glob: _Glob = None,
    tag: _Tags = None,
    cursor: Annotated[str | None, typer.Option(help="Start after the page that printed it.")] = None,
    limit: Annotated[int, typer.Option(help="Documents per page (1-200).")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print the page as JSON.")] = False,
) -> None:
    """List a corpus's documents: id, title, format, chunks and tags, a page at a time."""
    try:
        listing = _engine(ctx).list_documents(
            corpus, filter=make_filter(path_prefix=prefix, path_glob=glob, tags=tag), cursor=cursor, limit=limit
        )
    except CueRagError as exc:
        raise _fail(exc) from exc
    if as_json:
        out.print_json(listing.model_dump_json())
        return
    table = Table("doc_id", "title", "format", "chunks", "tags")
    for d in listing.documents:
        table.add_row(escape(d.doc_id), escape(d.title), d.format, str(d.chunks), escape(", ".join(d.tags)))
    out.print(table)
    shown = f"{len(listing.documents)} of {listing.total} documents"
    more = f"; next page: --cursor {listing.next_cursor}" if listing.next_cursor else ""
    out.print(shown + more, markup=False)


@app.command()
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


@app.command()
def stats(ctx: typer.Context, corpus: Annotated[str, typer.Option("--corpus", "-c", help=_CORPUS_HELP)]) -> None:
    """Show the graph sizes of one corpus, edges included."""
    try:
        sizes = _engine(ctx).sizes(corpus)
    except CueRagError as exc:
        raise _fail(exc) from exc
    out.print_json(json.dumps({"corpus": corpus, **sizes}))


@app.command()
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
        f"deleted {len(report.documents_deleted)} documents ({report.chunks_deleted} chunks, "
        f"{report.units_removed} units, {report.entities_removed} entities)"
        + (f"; not found: {', '.join(report.not_found)}" if report.not_found else ""),
        markup=False,
    )


@app.command()
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


@app.command()
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
    print_result(explain(result, GraphTitles(engine.graph("sample"))), show_trace=True)


def main() -> None:
    try:
        app()
    except (OSError, CueRagError) as exc:
        # A disk or permission problem is the user's to fix, and one line says what it is; a
        # traceback panel would bury it.
        message = _os_message(exc) if isinstance(exc, OSError) else exc.for_cli()
        err.print(f"[red]error:[/red] {escape(message)}")
        raise SystemExit(1) from exc


def _os_message(exc: OSError) -> str:
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


@app.command(name="eval")
def eval_command(
    ctx: typer.Context,
    questions: Annotated[Path, typer.Option(help="Question file (HotpotQA, 2Wiki, MuSiQue or simple form).")],
    corpus_file: Annotated[
        Path,
        typer.Option("--corpus", help="Corpus file ([{title,text}] or {title: sentences}) or a folder of documents."),
    ],
    methods: Annotated[
        str,
        typer.Option(
            help="Comma-separated: qiter, dense, bm25, hybrid (dense+BM25 by RRF), ketrag; Q-Iter variants as "
            "qiter:key=value[:key=value], e.g. qiter:query_update=false"
        ),
    ] = "qiter,dense,bm25,hybrid,ketrag",
    k: Annotated[str, typer.Option("--k", help="Comma-separated cut-offs for recall@k.")] = "2,5",
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("eval-out"),
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="auto, hotpotqa, 2wiki, musique or simple.")] = "auto",
    answers: Annotated[
        bool | None,
        typer.Option(help="Score the LLM's answers (Accuracy, F1); default: on when an LLM is configured."),
    ] = None,
) -> None:
    """Measure each method's recall@k of gold passages on a question set.

    All methods share one index of the corpus. With an LLM configured, the accuracy and F1 of its
    answers from each method's top chunks are measured too."""
    from cuerag.evaluation import MAX_TOP_N, parse_method, run_eval, write_report

    try:
        ks = sorted({int(x) for x in k.split(",") if x.strip()})
        names = [m.strip() for m in methods.split(",") if m.strip()]
        if not names:
            raise CueRagError(f"no method given; choose from {', '.join(METHODS)}")
        for name in names:
            parse_method(name)
        if not ks or ks[0] < 1 or ks[-1] > MAX_TOP_N:
            raise CueRagError(f"--k needs integers from 1 to {MAX_TOP_N}, e.g. 2,5")
        if fmt not in ("auto", "hotpotqa", "2wiki", "musique", "simple"):
            raise CueRagError(f"unknown --format {fmt!r}; use auto, hotpotqa, 2wiki, musique or simple")
        engine = _with_models(_engine(ctx))
        with _progress() as progress:
            run = run_eval(
                engine,
                questions_file=questions,
                corpus_file=corpus_file,
                methods=names,
                ks=ks,
                params=QIterParams(),
                fmt=fmt,  # type: ignore[arg-type]
                limit=limit,
                progress=progress,
                answers=engine.llm is not None if answers is None else answers,
            )
    except ValueError as exc:
        raise _fail(CueRagError(str(exc))) from exc
    except CueRagError as exc:
        raise _fail(exc) from exc
    write_report(run, out_dir)
    out.print((out_dir / "report.md").read_text(), markup=False, highlight=False)


@app.command()
def bench(
    ctx: typer.Context,
    corpus_file: Annotated[Path, typer.Option("--corpus", help="Corpus file to index.")] = Path(
        "../shared/data/2wikimultihopqa/2wikimultihopqa_corpus.json"
    ),
    queries: Annotated[int, typer.Option(help="Queries to time for each method.")] = 200,
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("bench-out"),
    corpus: Annotated[str, typer.Option("--name", help="Corpus name to (re)build.")] = "bench",
) -> None:
    """Index a corpus from scratch and time indexing, queries (Q-Iter and dense) and start-up."""
    from cuerag.bench import bench_markdown, run_bench

    if not corpus_file.exists():
        raise _fail(CueRagError(f"corpus file not found: {corpus_file}"))
    try:
        with _progress() as bars:
            report = run_bench(
                _settings(ctx),
                corpus_file,
                corpus=corpus,
                queries=queries,
                progress=bars,
                on_query=lambda done, total: bars("queries", done, total),
            )
    except CueRagError as exc:
        raise _fail(exc) from exc
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "bench.json").write_text(report.model_dump_json(indent=2))
    text = bench_markdown(report)
    (out_dir / "bench.md").write_text(text)
    out.print(text, markup=False, highlight=False)


if __name__ == "__main__":
    main()
