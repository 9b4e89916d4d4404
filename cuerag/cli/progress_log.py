"""Progress as log lines, for runs whose stderr is not a terminal (a CI log, an agent's pipe):
there the bars draw nothing until the end, and a run of many minutes would look hung.

A line is written when a stage starts, each time it passes another tenth of its total (at most
one a second: a quick stage says only when it starts and ends), when it has said nothing for
`interval` seconds, and when it ends: a few dozen lines per run, each with
the count, the share, the time spent in the stage and an estimate of the time left.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Stage:
    started: float
    last_line: float
    last_tenth: int
    finished: bool = False


def _write_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


class ProgressLog:
    """A progress sink (stage, done, total) that writes rate-limited lines."""

    def __init__(
        self,
        *,
        interval: float = 10.0,
        min_gap: float = 1.0,
        write: Callable[[str], None] = _write_stderr,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._interval = interval
        self._min_gap = min_gap
        self._write = write
        self._clock = clock
        self._stages: dict[str, _Stage] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = self._clock()
        state = self._stages.get(stage)
        tenth = 10 * done // total if total > 0 else 10
        if state is None:
            state = self._stages[stage] = _Stage(started=now, last_line=now, last_tenth=tenth)
            self._line(stage, done, total, state, now)
            return
        if state.finished and done >= total:
            return  # a repeated final call says nothing new
        ended = total > 0 and done >= total
        quiet = now - state.last_line
        if ended or (tenth > state.last_tenth and quiet >= self._min_gap) or quiet >= self._interval:
            state.last_line, state.last_tenth, state.finished = now, tenth, ended
            self._line(stage, done, total, state, now)

    def _line(self, stage: str, done: int, total: int, state: _Stage, now: float) -> None:
        spent = now - state.started
        share = f" ({100 * done // total}%)" if total > 0 else ""  # floor: as the tenths are counted
        left = ""
        if 0 < done < total and spent > 0:
            left = f", about {_duration(spent * (total - done) / done)} left"
        self._write(f"{time.strftime('%H:%M:%S')} {stage}: {done}/{total}{share}, {_duration(spent)}{left}")
        if total > 0 and done >= total:
            state.finished = True
