"""What a command gets from the global options: the settings, the engine (opened on first use, its
store released when the command ends) and the models (loaded only where a command needs them)."""

from __future__ import annotations

import typer
from rich.markup import escape

from cuerag.cli.console import _fail, _os_message, err
from cuerag.config import Settings
from cuerag.engine.facade import CueRag
from cuerag.errors import CueRagError

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
