"""Index reports and retrieval results as a person reads them at the terminal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.table import Table

from cuerag.cli.console import _count, _shown, out, table_width
from cuerag.graph.citations import Citation
from cuerag.index.report_bounds import REPORTED_FILES, file_counts, files_line, passed_over_line
from cuerag.retrieval.explain import ExplainedResult, hop_label
from cuerag.retrieval.results import Anchor, TitleStep
from cuerag.text.entities import same_entity

if TYPE_CHECKING:  # the index's modules are not needed to print a query's result
    from cuerag.index.report import IndexReport


def print_report(report: IndexReport, *, told: Mapping[str, str] | None = None) -> None:
    """An index report for a person: one line per file that changed or failed, then the counts.
    `told` (path → reason): failures already shown, as by a watch's last sync, are named in one
    line without their reasons rather than shown again."""
    for label, files in (("added", report.added), ("changed", report.changed), ("removed", report.removed)):
        for f in files:
            out.print(f"{label:>8} {_shown(f.path)}")
    told = told or {}
    again = [f for f in report.failed if told.get(f.path) == f.reason]
    for f in report.failed:
        if told.get(f.path) != f.reason:
            out.print(f"[red]  failed[/red] {_shown(f.path)}: {_shown(f.reason)}")
    if again:
        names = ", ".join(_shown(f.path) for f in again)
        out.print(f"[red]  failed[/red] again, for the reasons given when they first failed: {names}")
    for f in report.warnings:
        if told.get(f.path) != f.reason:
            out.print(f"[yellow] warning[/yellow] {_shown(f.path)}: {_shown(f.reason)}")
    if any((report.added, report.changed, report.removed, report.skipped, report.failed, any(report.files.values()))):
        out.print(files_line(file_counts(report)))
        if report.lists_cut:
            out.print(
                f"(the first {REPORTED_FILES} files of each kind are listed, unchanged ones counted only; "
                "--full-report lists them all)"
            )
    if report.repaired:
        out.print(
            f"repaired: {_count(report.repaired, 'unchanged file')} whose stored links an older version resolved "
            "from the wrong folder; links resolved again, nothing embedded"
        )
    for left in report.left_out:
        more = " …" if left.count > len(left.paths) else ""
        shown = ", ".join(_shown(p) for p in left.paths)
        out.print(f"left out: {left.count} ({left.reason}): {shown}{more}", markup=False)
    if report.passed_over:
        out.print(passed_over_line(report.passed_over))
    out.print(
        f"corpus [bold]{report.corpus}[/bold]: {_count(report.documents_added, 'document')} added, "
        f"{report.documents_unchanged} unchanged, {report.documents_replaced} replaced, "
        f"{report.documents_removed} removed; "
        f"{_count(report.chunks_added, 'chunk')}, {_count(report.units_added, 'unit')}, "
        f"{_count(report.entities_added, 'entity', 'entities')} added "
        f"in {report.elapsed_seconds:.1f}s"
    )
    if report.chunks_llm or report.chunks_fallback:
        out.print(
            f"LLM units for {_count(report.chunks_llm, 'chunk')}; {report.chunks_fallback} fell back to sentences"
        )
    for stage, usage in report.llm_usage.items():
        out.print(
            f"LLM {stage}: {_count(usage.calls, 'call')} ({usage.cached_calls} from cache), "
            f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens"
        )
    if report.embedder_backend:
        out.print(
            f"embedder: {report.embedder_backend} {report.embedder_precision} ({report.embedder_precision_reason})",
            markup=False,
        )
    if (t := report.themes) is not None:
        share = f" ({t.seconds / report.elapsed_seconds:.0%} of the run)" if report.elapsed_seconds else ""
        out.print(
            f"themes: {_count(t.communities, 'community', 'communities')} in {_count(t.levels, 'level')}, "
            f"{t.written} written, {t.removed} removed, "
            f"drift {t.drift:.2f} (noise {t.noise:.2f}{_carried(t.unmeasured)}){', rebuilt' if t.rebuilt else ''}, "
            f"{t.seconds:.1f}s{share}",
            markup=False,
        )
        if (s := t.summaries) is not None and s.requested:
            u = s.usage
            out.print(
                f"theme summaries (LLM): {s.written} of {s.requested} written, {s.fallback} kept their extractive "
                f"title; {_count(u.calls, 'call')} ({u.cached_calls} from cache), {u.prompt_tokens} prompt + "
                f"{u.completion_tokens} completion tokens, {s.seconds:.1f}s",
                markup=False,
            )
            if s.problem:
                out.print(f"theme summaries stopped: {s.problem}", markup=False)
    out.print("totals: " + ", ".join(f"{k} {v}" for k, v in report.totals.items()))


def _carried(unmeasured: int) -> str:
    """A carried drift says how many documents changed since it was measured."""
    return f"; measured before the last {_count(unmeasured, 'document change')}" if unmeasured else ""


# Characters of each passage `cuerag query` shows unless `--chars` says otherwise: a table of five
# hits stays readable at the terminal; `--chars 0` shows them whole.
PASSAGE_CHARS = 300


def passage(text: str, chars: int) -> str:
    """A passage cut to `chars` characters, "…" the last of them (0: whole)."""
    return text if chars <= 0 or len(text) <= chars else text[: chars - 1] + "…"


def print_result(result: ExplainedResult, *, show_trace: bool, chars: int = PASSAGE_CHARS) -> None:
    table = Table(title=f"{result.method} · {_shown(result.query)}", show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("chunk, and why it is here")
    for rank, hit in enumerate(result.chunks, start=1):
        text = passage(hit.text, chars)
        label = (
            f"[bold]{_shown(hit.title)}[/bold] ({_shown(hit.doc_id)})\n{_shown(text)}\n"
            f"[italic]why: {_shown(hit.why.text)}[/italic]"
        )
        if hit.citation is not None:
            label += f"\n[dim]{_shown(cite_line(hit.citation))}[/dim]"
        table.add_row(str(rank), f"{hit.score:.3f}", label)
    out.print(table, width=table_width())
    if result.note:
        out.print(_shown(result.note))
    if show_trace and result.trace is not None:
        t = result.trace
        out.print(f"[bold]query entities[/bold]: {_shown(', '.join(t.query_entities)) or '—'}")
        anchors = dict.fromkeys(_anchor_label(a) for a in t.anchors)
        out.print(f"[bold]anchors[/bold]: {_shown(', '.join(anchors)) or '—'}")
        for d in t.depths:
            out.print(f"[bold]depth {d.depth}[/bold] — {d.candidates} candidate paths, kept {len(d.paths)}")
            for p in d.paths:
                kinds = p.via_kinds or ["entity"] * len(p.via_entities)
                steps = " → ".join(
                    _shown(f"[{hop_label(kind, via)}] {text}")
                    for via, kind, text in zip(p.via_entities, kinds, p.unit_texts, strict=True)
                )
                out.print(f"  {p.score:.3f}  {steps}")
        titles = {h.chunk_id: h.title for h in result.chunks}
        if t.title_steps:
            out.print(f"[bold]links[/bold] — {len(t.title_steps)} in the final rerank")
        for step in t.title_steps:
            out.print(f"  {step.score:.3f}  {_shown(_link_line(step, titles))}")
    out.print(f"[dim]{result.elapsed_ms:.0f} ms[/dim]")


def _anchor_label(anchor: Anchor) -> str:
    """Where an anchor came from: the question's mention it was linked to (shown when the entity's
    name differs from it), or a unit near the question."""
    if anchor.source == "unit":
        return f"{anchor.name} (nearest unit)"
    if same_entity(anchor.name, anchor.mention):
        return f"{anchor.name} (question)"
    return f"{anchor.name} (near the question's “{anchor.mention}”)"


def _link_line(step: TitleStep, titles: dict[str, str]) -> str:
    """A link step of the final rerank on one line: which passage named or shared what, with the
    weight its specificity gave it. Passages not returned are shown by chunk id."""
    source = titles.get(step.from_chunk_id or "", step.from_chunk_id or "")
    weight = f"(specificity {step.specificity:.2f})"
    if step.kind == "named_in_query":
        return f"named in the question: {step.title} {weight}"
    if step.kind == "entity_link":
        return f"entity link: {source} → {step.title} via “{step.entity}” {weight}"
    if step.kind == "hyperlink":
        return f"hyperlink: {source} → {step.title}"
    if step.kind == "note_section":
        return f"note section: {source} → {step.title}"
    return f"title link: {source} → {step.title} {weight}"


def cite_line(citation: Citation) -> str:
    """A hit's citation on one line: file, pages, section, span, and the documents it links to."""
    parts = [citation.source]
    if citation.pages:
        first, last = citation.pages[0], citation.pages[-1]
        parts.append(f"p. {first}" if first == last else f"pp. {first}-{last}")
    if citation.heading:
        parts.append(f"§ {citation.heading}")
    if citation.start is not None:
        parts.append(f"chars {citation.start}-{citation.end}")
    linked = list(dict.fromkeys(link.doc_id for link in citation.links if link.doc_id))
    if linked:
        parts.append("links to " + ", ".join(linked[:5]) + (" …" if len(linked) > 5 else ""))
    return " · ".join(parts)
