"""`cuerag bench`: index throughput per stage, query latency of Q-Iter and dense in the same run,
peak memory, index size on disk and start-up time. Prints figures; asserts nothing."""

from __future__ import annotations

import random
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from cuerag.config import QIterParams, Settings
from cuerag.engine.facade import CueRag
from cuerag.evaluation.runner import stage_medians
from cuerag.graph.schema import KINDS, collection_name
from cuerag.index.report import Progress
from cuerag.index.sync import load_paths
from cuerag.models.precision import read_cpuinfo

DEFAULT_BENCH_CORPUS = Path("../shared/data/2wikimultihopqa/2wikimultihopqa_corpus.json")

# Question shapes of 2WikiMultiHopQA, filled with titles from the corpus: the latency of a query
# depends on its entities and the graph around them, so the queries must name real nodes.
_TEMPLATES = (
    "Who is the spouse of the director of {t}?",
    "Where was the performer of {t} born?",
    "Which country is {t} from?",
    "When did the father of {t} die?",
    "Which film came out first, {t} or {u}?",
    "Are {t} and {u} from the same country?",
)


# The CPU features that decide the embedder's speed (precision and int8 kernels).
_FLAGS_SHOWN = frozenset({"avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16", "amx_int8"})


class BenchReport(BaseModel):
    corpus_file: str
    machine: dict[str, Any]
    index: dict[str, Any]
    query: dict[str, Any]
    startup: dict[str, Any]
    peak_rss_mb: float
    index_disk_mb: float | None


def _peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux.
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _percentiles(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values)
    return {f"p{p}": round(float(np.percentile(arr, p)), 2) for p in (50, 95, 99)}


def make_queries(titles: list[str], n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(_TEMPLATES).format(t=rng.choice(titles), u=rng.choice(titles)) for _ in range(n)]


def _disk_mb(settings: Settings, corpus: str) -> float | None:
    if settings.qdrant_url or settings.store != "edge":
        return None
    root = settings.data_dir / "qdrant-edge"
    total = 0
    for kind in KINDS:
        folder = root / collection_name(corpus, kind)
        total += sum(f.stat().st_blocks * 512 for f in folder.rglob("*") if f.is_file())
    return round(total / 2**20, 1)


def run_bench(
    settings: Settings,
    corpus_file: Path,
    *,
    corpus: str,
    queries: int,
    progress: Progress | None = None,
    on_query: Callable[[int, int], None] | None = None,
) -> BenchReport:
    started = time.perf_counter()
    engine = CueRag(settings)
    model_load_s = time.perf_counter() - started
    if corpus in engine.corpora():
        engine.drop_corpus(corpus)
    docs = load_paths([corpus_file])
    report = engine.index_documents(corpus, docs, progress=progress)
    totals = report.totals
    index = {
        "documents": len(docs),
        "wall_seconds": report.elapsed_seconds,
        "stage_seconds": report.stage_seconds,
        "passages_per_s": round(len(docs) / report.elapsed_seconds, 1),
        "units_per_s": round(totals["units"] / report.elapsed_seconds, 1),
        "model_load_seconds": round(model_load_s, 2),
        "totals": totals,
        "embedder": {
            "backend": report.embedder_backend,
            "precision": report.embedder_precision,
            "reason": report.embedder_precision_reason,
            "chunk_vectors": report.chunk_vectors,
        },
    }

    titles = [d.title for d in docs if d.title]
    qs = make_queries(titles, queries)
    params = QIterParams()
    engine.query(corpus, qs[0], params=params)  # warm-up: first-call costs are not latency
    latencies: dict[str, list[float]] = {"qiter": [], "dense": []}
    stages: list[dict[str, float]] = []
    for i, q in enumerate(qs):
        for method in ("qiter", "dense"):
            t0 = time.perf_counter()
            result = engine.query(corpus, q, params=params, method=method)
            latencies[method].append((time.perf_counter() - t0) * 1000)
            if result.trace is not None:
                stages.append(result.trace.stage_ms)
        if on_query:
            on_query(i + 1, len(qs))
    qiter, dense = _percentiles(latencies["qiter"]), _percentiles(latencies["dense"])
    query: dict[str, Any] = {
        "qiter": qiter,
        "dense": dense,
        "qiter_over_dense_p50": round(qiter["p50"] / max(dense["p50"], 1e-9), 2),
        "qiter_stage_ms_p50": stage_medians(stages),
        "queries": len(qs),
    }
    models = engine.models
    engine.close()
    del engine

    # Start-up: open the existing index (store + graph rebuilt from it) until the first answer.
    # The models are reused: their load time was measured above.
    t0 = time.perf_counter()
    engine2 = CueRag(settings, models=models)
    engine2.query(corpus, qs[0], params=params)
    open_s = time.perf_counter() - t0
    startup = {
        "model_load_seconds": round(model_load_s, 2),
        "open_index_and_first_query_seconds": round(open_s, 2),
        "total_seconds": round(model_load_s + open_s, 2),
    }
    engine2.close()

    import os
    import platform

    cpu = read_cpuinfo()
    machine = {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_model": cpu.model,
        "cpu_flags": sorted(f for f in cpu.flags if f in _FLAGS_SHOWN),
    }
    return BenchReport(
        corpus_file=str(corpus_file),
        machine=machine,
        index=index,
        query=query,
        startup=startup,
        peak_rss_mb=_peak_rss_mb(),
        index_disk_mb=_disk_mb(settings, corpus),
    )


def bench_markdown(report: BenchReport) -> str:
    ix, q, st = report.index, report.query, report.startup
    stages = ", ".join(f"{k} {v:.1f}s" for k, v in ix["stage_seconds"].items())
    return "\n".join(
        [
            f"# cuerag bench: {Path(report.corpus_file).name}",
            "",
            f"Machine: {report.machine['cpus']} CPUs, {report.machine['platform']}, Python {report.machine['python']}",
            f"CPU: {report.machine.get('cpu_model') or '?'}; flags: {' '.join(report.machine.get('cpu_flags', []))}",
            "",
            f"- Embedder: {_embedder(ix)}",
            f"- Index: {ix['documents']} passages in {ix['wall_seconds']:.1f} s ({ix['passages_per_s']} passages/s, "
            f"{ix['units_per_s']} units/s); stages: {stages}",
            "- Graph: " + ", ".join(f"{k} {v}" for k, v in ix["totals"].items()),
            f"- Query latency over {q['queries']} queries (ms): Q-Iter {_fmt(q['qiter'])}; dense {_fmt(q['dense'])};"
            f" Q-Iter/dense at p50 {q['qiter_over_dense_p50']}x",
            "- Q-Iter by stage (median ms): "
            + ", ".join(f"{stage} {ms}" for stage, ms in q.get("qiter_stage_ms_p50", {}).items()),
            f"- Start-up: models {st['model_load_seconds']} s, open index (graph rebuilt from the store) + first "
            f"query {st['open_index_and_first_query_seconds']} s",
            f"- Peak RSS {report.peak_rss_mb} MB; index on disk {report.index_disk_mb} MB",
            "",
        ]
    )


def _embedder(index: dict[str, Any]) -> str:
    run = index.get("embedder") or {}
    return f"{run.get('backend', '?')} {run.get('precision', '?')} ({run.get('reason', '')})"


def _fmt(p: dict[str, float]) -> str:
    return f"p50 {p['p50']}, p95 {p['p95']}, p99 {p['p99']}"
