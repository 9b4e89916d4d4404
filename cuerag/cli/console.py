"""Where the CLI writes: results to stdout, errors and progress to stderr, lines unwrapped off a
terminal but tables drawn in COLUMNS (else 100), indexed text with its control characters made visible."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console, ConsoleDimensions
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cuerag.cli.messages import cli_message
from cuerag.cli.progress_log import ProgressLog
from cuerag.errors import CueRagError
from cuerag.text.counts import counted

if TYPE_CHECKING:  # the index's modules are not needed to print (a query answered by a server)
    from cuerag.index.report import Progress as IndexProgress


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
# Columns a table is drawn in off a terminal when COLUMNS does not say: a table sizes itself to its
# widest cell, so unbounded it padded every line of `cuerag query > file` to ~380 columns.
_PIPED_TABLE_COLUMNS = 100


def table_width() -> int | None:
    """The width to draw a table in: the terminal's on one (None), else COLUMNS when it is a
    positive number, else `_PIPED_TABLE_COLUMNS`. A table's cells wrap within it; plain lines stay
    whole (`_Console`)."""
    if out.is_terminal:
        return None
    columns = os.environ.get("COLUMNS", "").strip()
    return int(columns) if columns.isdigit() and int(columns) > 0 else _PIPED_TABLE_COLUMNS


out = _Console()

err = _Console(stderr=True)

_CORPUS_HELP = "The corpus (see `cuerag corpora`)."


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


# Every count the CLI prints agrees with its number (the same helper as the tools' text).
_count = counted


def _shown(text: str) -> str:
    """Indexed text for the terminal: rich markup escaped, and control characters written as
    \\xNN so that a document cannot move the cursor, clear the screen or retitle the window."""
    return escape(_plain(text))


def _plain(text: str) -> str:
    """Indexed text printed with markup off (a document read back, a theme's summary): its control
    characters written as \\xNN (line breaks and tabs kept), as `_shown` writes them. Printed raw,
    an escape sequence in a document retitled the terminal or set its clipboard (OSC 52)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _fail(exc: CueRagError) -> typer.Exit:
    err.print(f"[red]error:[/red] {escape(cli_message(exc))}")
    return typer.Exit(1)


def _os_message(exc: OSError) -> str:
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"
