"""`cuerag bench` on the sample corpus: it reports Q-Iter's time by stage next to the totals."""

from __future__ import annotations

from pathlib import Path

from conftest import SAMPLE_CORPUS

from cuerag import Settings
from cuerag.evaluation.bench import bench_markdown, run_bench


def test_bench_reports_where_q_iters_time_goes(tmp_path: Path) -> None:
    report = run_bench(Settings(data_dir=tmp_path), SAMPLE_CORPUS, corpus="bench", queries=3)
    stages = report.query["qiter_stage_ms_p50"]
    assert {"embed", "ner", "entity_linking", "anchor_units", "beam", "rerank", "links"} <= set(stages)
    assert all(ms >= 0.0 for ms in stages.values())
    text = bench_markdown(report)
    assert "Q-Iter by stage (median ms): embed" in text
