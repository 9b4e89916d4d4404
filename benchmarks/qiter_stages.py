"""Q-Iter's time per stage on an existing index, opened read-only, and its results for comparison.

    OMP_NUM_THREADS=1 PYTHONPATH=CHECKOUT .venv/bin/python benchmarks/qiter_stages.py \\
        DATA_DIR QUESTIONS CORPUS_FILE OUT.json

The index is the one `cuerag eval` built for CORPUS_FILE (its corpus is named after the file's
content). Five questions warm up, then every question is asked once (top 10). Prints the p50 and
p95 of the whole query and of each stage (`cuerag.retrieval.qiter.STAGES`); writes each question's result,
times left out, to OUT.json, so that two checkouts run on the same index can be compared (their
results should be equal when a change is only about speed). Run two checkouts one after the other,
alternating, and say the load (`uptime`): on a shared machine the load moves the figures more
than a few milliseconds of change.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from cuerag import CueRag, QIterParams, Settings
from cuerag.evaluation.questions import load_questions
from cuerag.evaluation.runner import corpus_name_for
from cuerag.index.sync import load_paths
from cuerag.retrieval.stages import STAGES


def main(data_dir: Path, questions_file: Path, corpus_file: Path, out: Path) -> None:
    engine = CueRag(Settings(data_dir=data_dir, read_only=True))
    questions = load_questions(questions_file, load_paths([corpus_file]))
    corpus = corpus_name_for(corpus_file)
    params = QIterParams(top_n=10)
    for q in questions[:5]:
        engine.query(corpus, q.question, params=params)
    rows = []
    for q in questions:
        result = engine.query(corpus, q.question, params=params)
        assert result.trace is not None
        dumped = result.model_dump(exclude={"elapsed_ms"})
        dumped["trace"].pop("stage_ms")
        rows.append({"stage_ms": result.trace.stage_ms, "elapsed_ms": result.elapsed_ms, "result": dumped})
    out.write_text(json.dumps(rows))
    total = [r["elapsed_ms"] for r in rows]
    print(f"{len(rows)} questions: p50 {np.percentile(total, 50):.1f} ms, p95 {np.percentile(total, 95):.1f} ms")
    for stage in STAGES:
        ms = [r["stage_ms"].get(stage, 0.0) for r in rows]
        print(f"  {stage:<15} p50 {np.percentile(ms, 50):6.1f}  p95 {np.percentile(ms, 95):6.1f}")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*(Path(a) for a in sys.argv[1:5]))
