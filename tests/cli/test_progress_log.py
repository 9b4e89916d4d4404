"""Progress shows when stderr is not a terminal too: log lines at a bounded rate, not silence
until the end; on a terminal the bars stay."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import cuerag.cli.app
import cuerag.cli.console
import cuerag.cli.context
from cuerag import CueRag
from cuerag.cli.progress_log import ProgressLog
from cuerag.models.loading import Models

SAMPLE_CORPUS = Path(cuerag.__file__).parent / "data" / "sample_corpus.json"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_line_per_tenth_and_per_quiet_interval_and_at_the_end() -> None:
    lines: list[str] = []
    clock = Clock()
    log = ProgressLog(interval=10.0, write=lines.append, clock=clock)
    for done in range(0, 1001):  # a thousand small steps in 20 s: one line per tenth, not a thousand
        clock.now = done / 50
        log("embed units", done, 1000)
    assert len(lines) == 11, lines  # the start, then 10%, 20%, ... 100%
    assert lines[0].endswith("embed units: 0/1000 (0%), 0 s")
    assert "500/1000 (50%)" in lines[5] and "10 s, about 10 s left" in lines[5]
    assert lines[-1].endswith("1000/1000 (100%), 20 s")
    log("embed units", 1000, 1000)  # a repeated final call adds nothing
    assert len(lines) == 11
    for done in range(0, 101):  # a quick stage: its start and its end
        clock.now = 20 + done / 1000
        log("split", done, 100)
    assert [line.split(" ", 1)[1] for line in lines[11:]] == ["split: 0/100 (0%), 0 s", "split: 100/100 (100%), 0 s"]


def test_a_slow_stage_still_speaks_every_interval() -> None:
    lines: list[str] = []
    clock = Clock()
    log = ProgressLog(interval=10.0, write=lines.append, clock=clock)
    log("ner", 0, 1000)
    for second in range(1, 61):  # one item every 5 s: under a tenth in a minute
        clock.now = float(second * 5)
        log("ner", second, 1000)
    assert len(lines) == 1 + 30, lines  # the start, then one line per 10 s
    assert "60/1000 (6%), 5.0 min, about 78.3 min left" in lines[-1]
    log("store", 5, 0)  # a stage with no total is reported, not divided by
    assert lines[-1].endswith("store: 5/0, 0 s")


@pytest.mark.parametrize("terminal", [False, True])
def test_cli_index_logs_progress_without_a_terminal_and_draws_bars_with_one(
    terminal: bool, models: Models, tmp_path: Path
) -> None:
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cuerag.cli.context, "make_own_engine", functools.partial(CueRag, models=models))
        if terminal:
            patch.setattr(cuerag.cli.console, "err", Console(stderr=True, force_terminal=True, width=100))
        result = runner.invoke(
            cuerag.cli.app.app, ["index", str(SAMPLE_CORPUS), "-c", "s", "--data-dir", str(tmp_path / "data")]
        )
    assert result.exit_code == 0, result.output
    logged = [line for line in result.stderr.splitlines() if ": " in line and "/" in line]
    if terminal:
        assert "━" in result.stderr and not any(line.endswith("(100%), 0 s") for line in logged)
    else:
        for stage in ("split", "ner", "embed units", "embed chunks", "store"):
            assert any(f" {stage}: " in line and "(100%)" in line for line in logged), (stage, result.stderr)
    assert "embedder: " in result.stdout  # which backend and precision ran, and why
