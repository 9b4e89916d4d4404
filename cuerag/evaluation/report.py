"""What an evaluation run writes: `results.json`'s model, `report.md` with its tables and the recall chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cuerag.evaluation.answers import ANSWER_TOP_N
from cuerag.llm.client import LLMUsage
from cuerag.retrieval.stages import STAGES


class EvalRun(BaseModel):
    """What `cuerag eval` writes to results.json."""

    questions_file: str
    corpus_file: str
    corpus: str
    ks: list[int]
    params: dict[str, Any] = {}
    methods: dict[str, dict[str, float]]
    questions: list[dict[str, Any]]
    llm: str | None = None  # the model that wrote the answers, when answers were scored
    llm_usage: dict[str, LLMUsage] = {}  # per method


def write_report(run: EvalRun, out_dir: Path) -> str:
    """results.json (machine-readable) and report.md (a table); returns the table, so a caller
    shows this run's and never what another run wrote to the same folder since."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(run.model_dump_json(indent=2))
    metrics = [f"recall@{k}" for k in run.ks] + [f"all_recall@{k}" for k in run.ks] + [f"coverage@{k}" for k in run.ks]
    if run.llm:
        metrics += ["answer_accuracy", "answer_f1"]
    lines = [
        f"# Retrieval evaluation: {Path(run.questions_file).name}",
        "",
        f"{len(run.questions)} questions, corpus `{Path(run.corpus_file).name}` (index `{run.corpus}`)."
        + (f" Answers by `{run.llm}` from the top {ANSWER_TOP_N} chunks." if run.llm else ""),
        "",
        "| method | " + " | ".join(metrics) + " | p50 ms | p95 ms |",
        "|---|" + "---|" * (len(metrics) + 2),
    ]
    for name, m in run.methods.items():
        cells = [f"{m[x]:.3f}" for x in metrics]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {m['latency_ms_p50']:.1f} | {m['latency_ms_p95']:.1f} |")
    lines += _stage_table(run)
    lines += ["", "![recall@k per method](recall.png)"]
    text = "\n".join(lines) + "\n"
    (out_dir / "report.md").write_text(text)
    write_chart(run, out_dir)
    return text


def _stage_table(run: EvalRun) -> list[str]:
    """Where Q-Iter's time goes: the median milliseconds of each stage, per Q-Iter method."""
    rows = {name: m for name, m in run.methods.items() if any(f"{s}_ms_p50" in m for s in STAGES)}
    if not rows:
        return []
    stages = [s for s in STAGES if any(f"{s}_ms_p50" in m for m in rows.values())]
    lines = ["", "Q-Iter's time by stage (median ms per query):", "", "| method | " + " | ".join(stages) + " |"]
    lines.append("|---|" + "---|" * len(stages))
    for name, m in rows.items():
        lines.append(f"| {name} | " + " | ".join(f"{m.get(f'{s}_ms_p50', 0.0):.1f}" for s in stages) + " |")
    return lines


def write_chart(run: EvalRun, out_dir: Path) -> Path:
    """recall@k per method as a grouped bar chart (PNG)."""
    import matplotlib

    matplotlib.use("Agg")  # no display: write files only
    import matplotlib.pyplot as plt

    methods = list(run.methods)
    width = 0.8 / max(len(methods), 1)
    fig, ax = plt.subplots(figsize=(1.6 + 1.2 * len(run.ks), 3.6), dpi=120)
    for i, name in enumerate(methods):
        xs = [j + i * width for j in range(len(run.ks))]
        ys = [run.methods[name][f"recall@{k}"] for k in run.ks]
        bars = ax.bar(xs, ys, width, label=name)
        ax.bar_label(bars, labels=[f"{y:.2f}" for y in ys], fontsize=6, padding=1)
    ax.set_xticks([j + width * (len(methods) - 1) / 2 for j in range(len(run.ks))])
    ax.set_xticklabels([f"recall@{k}" for k in run.ks])
    ax.set_ylim(0, 1.18)
    ax.set_title(f"{Path(run.questions_file).name}: {len(run.questions)} questions", fontsize=9)
    ax.legend(fontsize=7, loc="upper center", ncols=len(methods), frameon=False)
    fig.tight_layout()
    path = out_dir / "recall.png"
    fig.savefig(path)
    plt.close(fig)
    return path
