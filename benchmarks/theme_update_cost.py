"""What a small change costs the stored theme hierarchy (issue 32, item 5): one document added,
then the same document deleted, each an index run whose report times the theme update.

    OMP_NUM_THREADS=1 python benchmarks/theme_update_cost.py DATA_DIR CORPUS

DATA_DIR must be writable (copy an index first: the runs write into it). Prints each run's total
seconds, its theme update's seconds and drift (with how many documents changed since that drift
was measured).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from cuerag.config import Settings
from cuerag.engine.facade import CueRag
from cuerag.engine.reports import DeleteReport
from cuerag.index.report import IndexReport
from cuerag.ingest.documents import Document

NOTE = Document(
    id="theme-update-cost-note",
    title="A note added to measure the theme update",
    text="A short note about keeping honey bees: the hive, its queen and the honey harvest in late summer.",
)


def line(what: str, seconds: float, report: IndexReport | DeleteReport) -> str:
    t = report.themes
    themes = (
        "no theme update"
        if t is None
        else (f"themes {t.seconds:.2f} s, {t.written} written, drift {t.drift:.3f}, unmeasured {t.unmeasured}")
    )
    return f"{what}: run {seconds:.2f} s, {themes}"


def main() -> None:
    data_dir, corpus = Path(sys.argv[1]), sys.argv[2]
    engine = CueRag(Settings(data_dir=data_dir))
    engine.graph(corpus)  # the snapshot and models loaded before anything is timed
    for what, run in (
        ("add one document", lambda: engine.index_documents(corpus, [NOTE])),
        ("delete it", lambda: engine.delete_documents(corpus, [NOTE.id])),
    ):
        started = time.perf_counter()
        report = run()
        print(line(what, time.perf_counter() - started, report), flush=True)
    engine.close()


if __name__ == "__main__":
    main()
