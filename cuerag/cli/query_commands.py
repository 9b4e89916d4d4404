"""`cuerag query`, `answer`, `read` and `documents`: retrieval, answers, documents and listings."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from cuerag.cli.console import _CORPUS_HELP, _count, _fail, _plain, _shown, err, out
from cuerag.cli.context import _engine, _say_models_load_here
from cuerag.cli.messages import FILTER_FLAGS
from cuerag.cli.render import PASSAGE_CHARS, print_result
from cuerag.config import param_help
from cuerag.engine.params import make_params
from cuerag.errors import CueRagError
from cuerag.retrieval.filters import make_filter

_Docs = Annotated[list[str] | None, typer.Option(FILTER_FLAGS["doc_ids"], help="Only this document id; repeatable.")]

_Prefix = Annotated[
    str | None, typer.Option(FILTER_FLAGS["path_prefix"], help="Only documents whose source path starts so.")
]

_Glob = Annotated[
    str | None, typer.Option(FILTER_FLAGS["path_glob"], help="Only documents whose source path matches (fnmatch).")
]

_Tags = Annotated[
    list[str] | None, typer.Option(FILTER_FLAGS["tags"], help="Only documents tagged so (front matter); repeatable.")
]


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
    chars: Annotated[
        int, typer.Option("--chars", min=0, help="Characters of each passage shown (0: the whole passage).")
    ] = PASSAGE_CHARS,
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
        engine = _engine(ctx)
        _say_models_load_here(engine)
        result = engine.query(
            corpus,
            question,
            params=params,
            method=method,  # type: ignore[arg-type]
            llm_entities=llm_entities,
            filter=make_filter(doc_ids=doc, path_prefix=prefix, path_glob=glob, tags=tag),
        )
    except CueRagError as exc:
        raise _fail(exc) from exc
    if as_json:
        out.print_json(result.model_dump_json())
    else:
        print_result(result, show_trace=trace, chars=chars)


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
        engine = _engine(ctx)
        _say_models_load_here(engine)
        result = engine.answer(
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
    for rank, hit in enumerate(result.chunks, start=1):
        why = hit.why.text
        out.print(f"  [{rank}] {_shown(hit.title)} ({_shown(hit.doc_id)}) [dim]— {_shown(why)}[/dim]")
    tokens = ", ".join(f"{k} {u.prompt_tokens}+{u.completion_tokens}" for k, u in result.llm_usage.items())
    out.print(f"[dim]{result.elapsed_ms:.0f} ms; LLM tokens (prompt+completion): {tokens}[/dim]")


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
    head = f"{_plain(doc.title)} ({_plain(doc.source)}), characters {doc.start}-{doc.end} of {doc.total_chars}"
    out.print(head + pages, markup=False)
    out.print(_plain(doc.text), markup=False, highlight=False)
    if doc.end < doc.total_chars:  # said at the end too, where a reader of a long text looks
        err.print(f"… {doc.total_chars - doc.end} more characters; read on with --start {doc.end}", markup=False)


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
        table.add_row(_shown(d.doc_id), _shown(d.title), d.format, str(d.chunks), _shown(", ".join(d.tags)))
    out.print(table)
    shown = f"{len(listing.documents)} of {_count(listing.total, 'document')}"
    more = f"; next page: --cursor {listing.next_cursor}" if listing.next_cursor else ""
    out.print(shown + more, markup=False)
