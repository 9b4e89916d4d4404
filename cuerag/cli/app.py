"""The `cuerag` command line: index, watch, query, corpora, stats, demo, eval and bench.

Results go to stdout (plain or `--json`); progress bars and logs go to stderr.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from cuerag.cli import corpus_commands, eval_commands, index_commands, query_commands, theme_commands
from cuerag.cli.console import _os_message, err
from cuerag.cli.messages import cli_message
from cuerag.cli.options import OptionsAnywhere
from cuerag.config import Settings
from cuerag.errors import CueRagError
from cuerag.llm.redact import redact_urls_in

app = typer.Typer(
    cls=OptionsAnywhere,
    add_completion=False,
    no_args_is_help=True,
    help="CUE-RAG multi-hop retrieval. Global options go before or after the command.",
)


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


def main() -> None:
    try:
        app()
    except (OSError, CueRagError) as exc:
        # A disk or permission problem is the user's to fix, and one line says what it is; a
        # traceback panel would bury it.
        message = _os_message(exc) if isinstance(exc, OSError) else cli_message(exc)
        err.print(f"[red]error:[/red] {escape(message)}")
        raise SystemExit(1) from exc


# The commands, in the order `cuerag --help` lists them.
for command in (
    index_commands.index,
    index_commands.watch,
    query_commands.query,
    query_commands.answer,
    query_commands.read,
    query_commands.documents,
    theme_commands.themes,
    corpus_commands.corpora,
    corpus_commands.stats,
    corpus_commands.delete,
    corpus_commands.drop,
    corpus_commands.demo,
):
    app.command()(command)
app.command(name="global")(theme_commands.global_search)
app.command(name="eval")(eval_commands.eval_command)
app.command()(eval_commands.bench)

if __name__ == "__main__":
    main()
