"""What the CLI prints of an index report, counted in words that agree with their numbers: "1 chunk",
not "1 chunks"."""

from __future__ import annotations

import pytest

from cuerag.cli.console import _count
from cuerag.cli.render import print_report
from cuerag.index.report import IndexReport, ThemesReport
from cuerag.llm.client import LLMUsage


def test_a_count_of_one_is_singular() -> None:
    assert (_count(1, "chunk"), _count(0, "chunk"), _count(2, "chunk")) == ("1 chunk", "0 chunks", "2 chunks")
    assert (_count(1, "entity", "entities"), _count(3, "entity", "entities")) == ("1 entity", "3 entities")


def test_an_index_report_of_one_of_each_says_so_in_the_singular(capsys: pytest.CaptureFixture[str]) -> None:
    report = IndexReport(
        corpus="notes",
        documents_added=1,
        chunks_added=1,
        units_added=1,
        entities_added=1,
        chunks_llm=1,
        llm_usage={"extract": LLMUsage(calls=1)},
        themes=ThemesReport(communities=1, levels=1, unmeasured=1),
    )
    print_report(report)
    shown = capsys.readouterr().out
    for said in ("1 document added", "1 chunk, 1 unit, 1 entity added", "LLM units for 1 chunk;", "extract: 1 call "):
        assert said in shown, shown
    assert "1 community in 1 level," in shown and "the last 1 document change)" in shown, shown
    assert not any(f"1 {plural}" in shown for plural in ("chunks", "units", "entities", "calls", "levels")), shown
