"""The text channel of `index_corpus`: what the run did, in a few lines a model reads at a glance
(the structured content has the whole report as JSON). The JSON in the text channel made a model
that sees only the text (claude.ai and others) read two copies of up to a hundred paths and every
counter of every stage to learn that a folder was indexed. Every file that failed is named with
its reason (what the agent must act on); added, changed and removed files are named up to
`NAMED_FILES` each, the rest counted."""

from __future__ import annotations

import json

from cuerag.index.report import IndexReport
from cuerag.index.report_bounds import file_counts, files_line, passed_over_line
from cuerag.text.counts import counted

NAMED_FILES = 10  # per kind; the structured content lists up to 100 (full_report: all)


def _names(paths: list[str], total: int) -> str:
    named = paths[:NAMED_FILES]
    shown = ", ".join(json.dumps(p, ensure_ascii=False) for p in named)
    return shown + (f" and {total - len(named)} more" if total > len(named) else "")


def index_text(report: IndexReport) -> str:
    r = report
    lines = [
        f"indexed corpus {r.corpus} in {r.elapsed_seconds:.1f} s: {counted(r.documents_added, 'document')} added, "
        f"{r.documents_replaced} replaced, {r.documents_removed} removed, {r.documents_unchanged} unchanged; "
        f"{counted(r.chunks_added, 'chunk')}, {counted(r.units_added, 'unit')}, "
        f"{counted(r.entities_added, 'entity', 'entities')} added"
    ]
    n = file_counts(r)
    if any(n.values()):
        lines.append(files_line(n))
    for label in ("added", "changed", "removed"):
        files = getattr(r, label)
        if files:
            lines.append(f"{label}: {_names([f.path for f in files], n[label])}")
    if r.failed:
        lines.append("failed (the rest was indexed; a failed file keeps its earlier version):")
        lines += [f"- {json.dumps(f.path, ensure_ascii=False)}: {f.reason}" for f in r.failed]
        if n["failed"] > len(r.failed):
            lines.append(f"- and {n['failed'] - len(r.failed)} more (full_report=true lists them)")
    lines += [f"warning: {json.dumps(f.path, ensure_ascii=False)}: {f.reason}" for f in r.warnings]
    for left in r.left_out:
        lines.append(f"left out, {left.reason}: {_names(left.paths, left.count)}")
    if r.passed_over:
        lines.append(passed_over_line(r.passed_over))
    if r.themes is not None:
        t = r.themes
        lines.append(
            f"themes: {counted(t.communities, 'community', 'communities')} in {counted(t.levels, 'level')}"
            f"{', rebuilt' if t.rebuilt else ''}"
        )
    if r.totals:
        lines.append("the corpus now holds: " + ", ".join(f"{v} {k}" for k, v in r.totals.items() if v))
    return "\n".join(lines)
