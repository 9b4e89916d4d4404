"""What a command gets from the global options: the settings, the engine (opened on first use, its
store released when the command ends) and the models (loaded only where a command needs them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from cuerag.cli.console import _fail, _os_message, err
from cuerag.config import Settings
from cuerag.engine.sharing import RemoteEngine, open_engine
from cuerag.engine.surface import Engine
from cuerag.errors import CueRagError

if TYPE_CHECKING:
    from cuerag.engine.facade import CueRag

SAMPLE_QUESTION = "When did the 1979-80 European Cup winner win the FA Cup?"


def _settings(ctx: typer.Context) -> Settings:
    settings: Settings = ctx.obj["settings"]
    return settings


def make_own_engine(settings: Settings) -> CueRag:
    """This process's own engine (tests replace it with one given loaded models). The engine's
    code is imported here, only when this process opens the store: a command answered by the
    process serving the index (a query beside a running cuerag-mcp) never imports it, and starts
    in a fraction of the time."""
    from cuerag.engine.facade import CueRag

    return CueRag(settings)


def _is_own(engine: Engine) -> CueRag | None:
    """The engine as this process's own `CueRag`, or None when another process serves it (then
    the engine's code need not be imported to tell)."""
    if isinstance(engine, RemoteEngine):
        return None
    from cuerag.engine.facade import CueRag

    return engine if isinstance(engine, CueRag) else None


def _engine(ctx: typer.Context, *, standby: bool = False) -> Engine:
    """The engine, with its store open and no model loaded: commands that only read or delete
    from the store answer at once. When another process (an MCP server, another command) holds
    the data directory, the engine is that process's, reached over its socket, and it says so;
    when this process holds it, it serves it to the others while the command runs
    (cuerag.engine.sharing). `standby`: a long command (watch) takes over at once if that
    process ends."""
    if "engine" not in ctx.obj:
        ctx.obj["engine"] = _opened(ctx, lambda settings: open_engine(settings, standby=standby, make=make_own_engine))
        engine = ctx.obj["engine"]
        if isinstance(engine, RemoteEngine):
            models = (
                "its models are loaded: nothing loads here"
                if engine.models_loaded
                else "its models are not loaded yet: the first query loads them there, once, in tens of seconds; "
                "nothing loads here"
            )
            err.print(f"using the index served by process {engine.owner_pid} ({models})", markup=False)
    shared: Engine = ctx.obj["engine"]
    return shared


def _own_engine(ctx: typer.Context) -> CueRag:
    """The engine of this process alone, for commands that need its models and internals (eval):
    refused, as before sharing, while another process holds the data directory."""
    if "engine" not in ctx.obj:
        ctx.obj["engine"] = _opened(ctx, make_own_engine)
    engine = _is_own(ctx.obj["engine"])
    if engine is None:
        raise _fail(CueRagError("this command needs the index in this process: stop the process serving it"))
    return engine


def _opened(ctx: typer.Context, make: Callable[[Settings], Engine]) -> Engine:
    try:
        engine = make(_settings(ctx))
    except OSError as exc:  # a data directory that cannot be created, read or locked
        raise _fail(CueRagError(_os_message(exc))) from exc
    except CueRagError as exc:  # the index is open in a process that does not share it, say
        raise _fail(exc) from exc
    # Release the store (and its directory lock) when the command ends.
    ctx.call_on_close(engine.close)
    return engine


def _with_models(engine: Engine) -> Engine:
    """Load the models now, under a status line, once everything that can fail first has been
    checked (so an error exit never waits for them). An engine served by another process has
    them there."""
    own = _is_own(engine)
    if own is not None and not own.models_loaded:
        with err.status("loading models…"):
            _ = own.models
    return engine


def _say_models_load_here(engine: Engine) -> None:
    """Before a command that needs the models: say, once, that they load in this process (tens of
    seconds), and how to avoid it. Said off a terminal too, where the status line draws nothing."""
    if not isinstance(engine, RemoteEngine) and not engine.models_loaded:
        why = (
            "no cuerag process serves this data directory"
            if engine.settings.share
            else "sharing is off (CUERAG_SHARE=false)"
        )
        err.print(
            f"loading the models in this process ({why}): tens of seconds; with cuerag-mcp running on the "
            "same --data-dir, a query answers through it without this wait",
            markup=False,
        )


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
