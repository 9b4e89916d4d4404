"""`cuerag eval` and `cuerag bench`: recall over question sets, throughput and latency."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cuerag.cli.console import _fail, _progress, out
from cuerag.cli.context import _own_engine, _settings, _with_models
from cuerag.config import QIterParams
from cuerag.errors import CueRagError
from cuerag.retrieval.results import METHODS


def eval_command(
    ctx: typer.Context,
    questions: Annotated[Path, typer.Option(help="Question file (HotpotQA, 2Wiki, MuSiQue or simple form).")],
    corpus_file: Annotated[
        Path,
        typer.Option("--corpus", help="Corpus file ([{title,text}] or {title: sentences}) or a folder of documents."),
    ],
    methods: Annotated[
        str,
        typer.Option(
            help="Comma-separated: qiter, dense, bm25, hybrid (dense+BM25 by RRF), ketrag, global (theme-by-theme "
            "search for broad questions), archrag, leanrag; Q-Iter variants as "
            "qiter:key=value[:key=value], e.g. qiter:query_update=false"
        ),
    ] = "qiter,dense,bm25,hybrid,ketrag",
    k: Annotated[str, typer.Option("--k", help="Comma-separated cut-offs for recall@k.")] = "2,5",
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("eval-out"),
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="auto, hotpotqa, 2wiki, musique or simple.")] = "auto",
    answers: Annotated[
        bool | None,
        typer.Option(help="Score the LLM's answers (Accuracy, F1); default: on when an LLM is configured."),
    ] = None,
) -> None:
    """Measure each method's recall@k of gold passages on a question set.

    All methods share one index of the corpus. With an LLM configured, the accuracy and F1 of its
    answers from each method's top chunks are measured too."""
    from cuerag.evaluation.report import write_report
    from cuerag.evaluation.runner import MAX_TOP_N, parse_method, run_eval

    try:
        ks = sorted({int(x) for x in k.split(",") if x.strip()})
        names = [m.strip() for m in methods.split(",") if m.strip()]
        if not names:
            raise CueRagError(f"no method given; choose from {', '.join(METHODS)}")
        for name in names:
            parse_method(name)
        if not ks or ks[0] < 1 or ks[-1] > MAX_TOP_N:
            raise CueRagError(f"--k needs integers from 1 to {MAX_TOP_N}, e.g. 2,5")
        if fmt not in ("auto", "hotpotqa", "2wiki", "musique", "simple"):
            raise CueRagError(f"unknown --format {fmt!r}; use auto, hotpotqa, 2wiki, musique or simple")
        engine = _own_engine(ctx)
        _with_models(engine)
        with _progress() as progress:
            run = run_eval(
                engine,
                questions_file=questions,
                corpus_file=corpus_file,
                methods=names,
                ks=ks,
                params=QIterParams(),
                fmt=fmt,  # type: ignore[arg-type]
                limit=limit,
                progress=progress,
                answers=engine.llm is not None if answers is None else answers,
            )
    except ValueError as exc:
        raise _fail(CueRagError(str(exc))) from exc
    except CueRagError as exc:
        raise _fail(exc) from exc
    out.print(write_report(run, out_dir), markup=False, highlight=False)


def bench(
    ctx: typer.Context,
    corpus_file: Annotated[Path, typer.Option("--corpus", help="Corpus file to index.")] = Path(
        "../shared/data/2wikimultihopqa/2wikimultihopqa_corpus.json"
    ),
    queries: Annotated[int, typer.Option(help="Queries to time for each method.")] = 200,
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("bench-out"),
    corpus: Annotated[str, typer.Option("--name", help="Corpus name to (re)build.")] = "bench",
) -> None:
    """Index a corpus from scratch and time indexing, queries (Q-Iter and dense) and start-up."""
    from cuerag.evaluation.bench import bench_markdown, run_bench

    if not corpus_file.exists():
        raise _fail(CueRagError(f"corpus file not found: {corpus_file}"))
    try:
        with _progress() as bars:
            report = run_bench(
                _settings(ctx),
                corpus_file,
                corpus=corpus,
                queries=queries,
                progress=bars,
                on_query=lambda done, total: bars("queries", done, total),
            )
    except CueRagError as exc:
        raise _fail(exc) from exc
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "bench.json").write_text(report.model_dump_json(indent=2))
    text = bench_markdown(report)
    (out_dir / "bench.md").write_text(text)
    out.print(text, markup=False, highlight=False)
