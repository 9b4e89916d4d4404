"""What LLM-written theme titles and summaries cost (issue 32, item 6): calls, tokens and seconds on
a real corpus, the first time and again.

    CUERAG_LLM_PROVIDER=openai CUERAG_LLM_MODEL=smollm2 CUERAG_LLM_BASE_URL=http://127.0.0.1:8000/v1 \\
    OMP_NUM_THREADS=1 python benchmarks/theme_summaries.py DATA_DIR FILE... [--add FILE]

DATA_DIR should be new (its LLM cache is part of what is measured). The files are indexed into a
corpus of their own; then, each with its report's themes part:

1. the first run: the index, the hierarchy and a summary asked for every theme;
2. the same files again: nothing changed, no theme is asked about unless its answer was unusable
   (then from the cache);
3. the stored hierarchy dropped and the run repeated: every theme rebuilt and asked about again,
   every answer from the cache;
4. with `--add FILE`, that file added: only the themes it changes are asked about.

Prints one line per step, then the titles and summaries of the first run.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from cuerag.communities.stored import drop_themes, load_themes
from cuerag.config import Settings
from cuerag.engine.facade import CueRag
from cuerag.index.report import IndexReport

CORPUS = "summaries"


def _line(step: str, report: IndexReport, wall: float) -> str:
    themes = report.themes
    if themes is None or themes.summaries is None:
        return f"{step}: no theme summaries (themes off, or no LLM configured)"
    s, u = themes.summaries, themes.summaries.usage
    problem = f"; stopped: {s.problem}" if s.problem else ""
    return (
        f"{step}: run {wall:.1f} s, themes {themes.seconds:.1f} s ({themes.communities} communities, "
        f"{themes.levels} levels, {themes.written} points written, drift {themes.drift:.2f} (noise "
        f"{themes.noise:.2f}){', rebuilt' if themes.rebuilt else ''}); summaries {s.seconds:.1f} s: "
        f"{s.requested} asked, {s.written} written, {s.fallback} extractive; {u.calls} calls, "
        f"{u.cached_calls} from cache, {u.prompt_tokens} prompt + {u.completion_tokens} completion tokens{problem}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--add", type=Path, help="A file added in a last run.")
    args = parser.parse_args()
    engine = CueRag(Settings(data_dir=args.data_dir))
    try:

        def run(step: str, files: list[Path]) -> IndexReport:
            started = time.perf_counter()
            report = engine.index_paths(CORPUS, files)
            print(_line(step, report, time.perf_counter() - started), flush=True)
            return report

        first = run(f"1. first run ({len(args.files)} files)", args.files)
        run("2. same files again", args.files)
        drop_themes(engine.store, CORPUS)
        run("3. hierarchy dropped, rebuilt", args.files)
        if args.add is not None:
            run(f"4. {args.add.name} added", [*args.files, args.add])
        themes = load_themes(engine.store, CORPUS)
        assert themes is not None
        if first.elapsed_seconds:
            print(f"first run's index time: {first.elapsed_seconds:.1f} s, stages {first.stage_seconds}")
        for cid, r in themes.reports.items():
            print(f"{cid} ({len(r.documents)} docs) [{r.title}] -> {r.llm_title!r}: {r.llm_summary!r}")
    finally:
        engine.close()


if __name__ == "__main__":
    main()
