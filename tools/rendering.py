"""What a retrieval tool hands back, sized for an agent's context window.

`detail="compact"` (the default) gives each chunk with its title, ids, text and one reason it is
there (the best kept path, a named title, a title link or the dense fill); `detail="full"` gives
the whole result with the Q-Iter trace, each chunk explained as well. `render_text` writes the
short readable text a tool result carries beside its structured content, so the model reads the
passages and their reasons once, not the JSON a second time.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from cuerag import AnswerResult, ChunkHit, RetrievalResult
from cuerag.citations import Citation
from cuerag.explain import ExplainedResult, GraphTitles, HitReason, PathStep, explain, explain_hit

Detail = Annotated[
    Literal["compact", "full"],
    Field(description="full adds the trace."),
]

# Past this many characters a path step's statement is cut in the compact view: the step names the
# passage it is from, and that passage is in the result or one get_chunks call away.
_STEP_CHARS = 160
_HERE = "(a statement of this passage)"  # in place of a step's statement that the chunk's text holds


class CompactHit(BaseModel):
    rank: int
    title: str
    doc_id: str
    chunk_id: str
    score: float
    text: str
    why: str  # what brought the chunk in, in words
    path: list[PathStep] = []  # its best kept path; statements cut to 160 characters, its own not repeated
    # Where the chunk sits (source, pages, section, span). Its hyperlinks are left to get_chunks and
    # detail="full": an HTML page's can outnumber its words.
    citation: Citation | None = None


class CompactResult(BaseModel):
    """Retrieval at `detail="compact"`: the chunks and why each is there; no trace."""

    corpus: str
    query: str
    method: str
    chunks: list[CompactHit]
    elapsed_ms: float


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


def _compact_hit(rank: int, hit: ChunkHit, reason: HitReason) -> CompactHit:
    return CompactHit(
        rank=rank,
        title=hit.title,
        doc_id=hit.doc_id,
        chunk_id=hit.chunk_id,
        score=round(hit.score, 3),
        text=hit.text,
        why=reason.text,
        path=[_compact_step(s, hit) for s in reason.path],
        citation=None if hit.citation is None else hit.citation.model_copy(update={"links": []}),
    )


def _compact_step(step: PathStep, hit: ChunkHit) -> PathStep:
    """A step's statement, cut; one the hit's own text holds is not repeated."""
    unit = _HERE if step.title == hit.title and step.unit in hit.text else _cut(step.unit, _STEP_CHARS)
    return step.model_copy(update={"unit": unit})


def compact_result(result: RetrievalResult, titles: GraphTitles) -> CompactResult:
    return CompactResult(
        corpus=result.corpus,
        query=result.query,
        method=result.method,
        chunks=[
            _compact_hit(rank, hit, explain_hit(hit, result, titles)) for rank, hit in enumerate(result.chunks, start=1)
        ],
        elapsed_ms=result.elapsed_ms,
    )


def shaped_result(result: RetrievalResult, titles: GraphTitles, detail: str) -> CompactResult | ExplainedResult:
    return compact_result(result, titles) if detail == "compact" else explain(result, titles)


def compact_answer(result: AnswerResult, titles: GraphTitles) -> CompactAnswer:
    return CompactAnswer(
        corpus=result.corpus,
        question=result.question,
        answer=result.answer,
        method=result.method,
        chunks=[
            _compact_hit(rank, hit, explain_hit(hit, result, titles)) for rank, hit in enumerate(result.chunks, start=1)
        ],
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
            lines.append(f"  via {step.via}: {step.unit} ({step.title})")
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
                path=h.why.path,
            )
            for rank, h in enumerate(result.chunks, start=1)
        ]
    else:
        hits = result.chunks
    head = f"{result.method} on {result.corpus}: {len(hits)} chunks for {result.query!r} ({result.elapsed_ms:.0f} ms)"
    lines = [head, "", *_hits_text(hits)]
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
