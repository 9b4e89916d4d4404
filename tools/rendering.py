"""What a retrieval tool hands back, sized for an agent's context window.

`detail="compact"` (the default) gives each chunk with its title, ids, text, where it sits and one
reason it is there (the best kept path, a named title, a title link or the dense fill), and says
nothing twice: a path step whose statement is in a returned passage points to it by rank, and a
citation leaves out what the hit says already and what is empty. `detail="full"` gives the whole
result with the Q-Iter trace, each chunk explained as well. `render_text` writes the short readable
text a tool result carries beside its structured content, so the model reads the passages and their
reasons once, not the JSON a second time.

Measured on the 2Wiki index (50 questions, cl100k median, docs/performance.md): 2,069 tokens of structured
content and 1,518 of text before these cuts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from cuerag import AnswerResult, ChunkHit
from cuerag.graph.citations import Citation
from cuerag.retrieval.explain import ExplainedHit, ExplainedResult, PathStep

Detail = Annotated[
    Literal["compact", "full"],
    Field(description="full adds the trace."),
]

# Past this many characters a path step's statement is cut in the compact view: the step names the
# passage it is from, and that passage is one get_chunks call away.
_STEP_CHARS = 160


class _Lean(BaseModel):
    """Serialised without its empty fields: in a compact result an absent field costs nothing."""

    @model_serializer(mode="wrap")
    def _without_empty(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        return {k: v for k, v in dumped.items() if v is not None and v != [] and v != ""}


class CompactStep(_Lean):
    """A hop of the best path: what it came through (an entity's name, or a link edge: "hyperlink
    to “T”", "title “T” named") and the statement it reached, given as
    the rank of the returned passage that holds it (`passage`) or, when none does, as its text
    (cut) and its passage's title."""

    via: str
    passage: int | None = None
    unit: str = ""
    title: str = ""


class CompactCitation(_Lean):
    """Where the chunk sits, as one cites it: its source, section and pages. The document id is
    the hit's and the joined heading is the section's; the character span (read_document takes
    the chunk id instead) and the hyperlinks (an HTML page's can outnumber its words) are left to
    get_chunks and detail="full"."""

    source: str
    section: list[str] = []
    pages: list[int] = []


class CompactHit(BaseModel):
    rank: int
    title: str
    doc_id: str
    chunk_id: str
    score: float
    text: str
    why: str  # what brought the chunk in, in words
    path: list[CompactStep] = []  # its best kept path
    citation: CompactCitation | None = None


class CompactResult(BaseModel):
    """Retrieval at `detail="compact"`: the chunks and why each is there; no trace."""

    corpus: str
    query: str
    method: str
    chunks: list[CompactHit]
    elapsed_ms: float
    note: str | None = None  # why there are no chunks, when a filter selected no document


class CompactAnswer(BaseModel):
    """An answer at `detail="compact"`: the answer and the chunks it was written from."""

    corpus: str
    question: str
    answer: str
    method: str
    chunks: list[CompactHit]
    llm_tokens: int  # prompt + completion tokens over all stages
    elapsed_ms: float


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _compact_hits(hits: Sequence[ExplainedHit]) -> list[CompactHit]:
    return [
        CompactHit(
            rank=rank,
            title=hit.title,
            doc_id=hit.doc_id,
            chunk_id=hit.chunk_id,
            score=round(hit.score, 3),
            text=hit.text,
            # The path is listed beside the sentence, so the sentence need not name its entities.
            why=hit.why.brief or hit.why.text,
            path=[_compact_step(s, hits) for s in hit.why.path],
            citation=_compact_citation(hit.citation),
        )
        for rank, hit in enumerate(hits, start=1)
    ]


def _compact_step(step: PathStep, hits: Sequence[ChunkHit]) -> CompactStep:
    """A step pointing to the returned passage that holds its statement, or its statement, cut."""
    held = next((r for r, h in enumerate(hits, start=1) if h.title == step.title and step.unit in h.text), None)
    if held is not None:
        return CompactStep(via=step.label, passage=held)
    return CompactStep(via=step.label, unit=_cut(step.unit, _STEP_CHARS), title=step.title)


def _compact_citation(citation: Citation | None) -> CompactCitation | None:
    if citation is None:
        return None
    return CompactCitation(source=citation.source, section=citation.section, pages=citation.pages)


def compact_result(result: ExplainedResult) -> CompactResult:
    return CompactResult(
        corpus=result.corpus,
        query=result.query,
        method=result.method,
        chunks=_compact_hits(result.chunks),
        elapsed_ms=result.elapsed_ms,
        note=result.note,
    )


def shaped_result(result: ExplainedResult, detail: str) -> CompactResult | ExplainedResult:
    return compact_result(result) if detail == "compact" else result


def compact_answer(result: AnswerResult) -> CompactAnswer:
    return CompactAnswer(
        corpus=result.corpus,
        question=result.question,
        answer=result.answer,
        method=result.method,
        chunks=_compact_hits(result.chunks),
        llm_tokens=sum(u.prompt_tokens + u.completion_tokens for u in result.llm_usage.values()),
        elapsed_ms=result.elapsed_ms,
    )


# ---- text content ---------------------------------------------------------------------------------


def _hits_text(hits: list[CompactHit]) -> list[str]:
    lines: list[str] = []
    for h in hits:
        lines.append(f"[{h.rank}] {h.title or '(untitled)'} (doc {h.doc_id}, chunk {h.chunk_id}) score {h.score:.3f}")
        lines.append(f"why: {h.why}")
        for step in h.path:
            held = f"in [{step.passage}]" if step.passage is not None else f"{step.unit} ({step.title})"
            lines.append(f"  via {step.via}: {held}")
        lines.append(h.text)
        lines.append("")
    return lines


def _retrieval_text(result: CompactResult | ExplainedResult) -> str:
    if isinstance(result, ExplainedResult):
        hits = [
            CompactHit(
                rank=rank,
                title=h.title,
                doc_id=h.doc_id,
                chunk_id=h.chunk_id,
                score=h.score,
                text=h.text,
                why=h.why.text,
                path=[_compact_step(s, list(result.chunks)) for s in h.why.path],
            )
            for rank, h in enumerate(result.chunks, start=1)
        ]
    else:
        hits = result.chunks
    head = f"{result.method} on {result.corpus}: {len(hits)} chunks for {result.query!r} ({result.elapsed_ms:.0f} ms)"
    lines = [head, "", *([result.note, ""] if result.note else []), *_hits_text(hits)]
    if isinstance(result, ExplainedResult) and result.trace is not None:
        t = result.trace
        lines.append(
            f"trace: query entities {', '.join(t.query_entities) or 'none'}; {len(t.depths)} depths, "
            f"{sum(len(d.paths) for d in t.depths)} kept paths, {t.candidate_chunks} candidate chunks "
            "(every path is in the structured content)"
        )
    return "\n".join(lines).rstrip()


def render_text(result: BaseModel) -> str:
    """The text content of a tool result: a readable rendering where one is worth having, else
    the JSON (small results, whose structure is the point)."""
    if isinstance(result, CompactResult | ExplainedResult):
        return _retrieval_text(result)
    if isinstance(result, CompactAnswer):
        lines = [f"answer: {result.answer}", "", "from:"]
        lines += [f"[{h.rank}] {h.title} (doc {h.doc_id}) — {h.why}" for h in result.chunks]
        return "\n".join(lines)
    return json.dumps(result.model_dump(mode="json"), ensure_ascii=False)
