"""What a retrieval tool hands back, sized for an agent's context window.

`detail="compact"` (the default) gives each chunk with its title, ids, text, where it sits and one
reason it is there (the best kept path, a named title, a title link or the dense fill), and says
nothing twice: a path step whose statement is in a returned passage points to it by rank, and a
citation leaves out what the hit says already and what is empty. `detail="full"` gives the whole
result with the Q-Iter trace, each chunk explained as well. `render_text` writes the short readable
text a tool result carries beside its structured content, so the model reads the passages and their
reasons once, not the JSON a second time.

Both channels carry the same facts about each hit: Claude Code and Codex give the model only the
structured content, claude.ai and others only the text. So each hit's citation (source, section,
pages) and its document's resource URI are in both, at either detail.

Measured on the 2Wiki index (50 questions, cl100k median, docs/mcp.md): 1,494 tokens of structured
content and 1,268 of text with passages cut at COMPACT_TEXT_TOKENS (1,648 and 1,398 before).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from cuerag import AnswerResult, ChunkHit
from cuerag.communities.browse import ThemeListing
from cuerag.communities.theme_search import GlobalSearchResult
from cuerag.graph.catalog import DocumentPage
from cuerag.graph.citations import Citation
from cuerag.graph.document_text import DocumentText
from cuerag.index.report import IndexReport
from cuerag.retrieval.explain import ExplainedHit, ExplainedResult, PathStep
from cuerag.text.counts import counted
from cuerag.text.tools import TextTools
from tools.index_text import index_text
from tools.resources import document_uri, linkable
from tools.theme_text import global_search_text, themes_text

Detail = Annotated[
    Literal["compact", "full"],
    Field(description="full adds the trace."),
]

# Past this many characters a path step's statement is cut in the compact view: the step names the
# passage it is from, and that passage is one get_chunks call away.
_STEP_CHARS = 160

# Past this many tokens (cl100k, as benchmarks/tool_result_size.py counts) a passage's text is cut
# in the compact view, at a word, and the hit says where the rest is (`more`): documentation chunks
# run to 1,200 tokens, and five of them were 18,876 characters in each channel (issue 30). 160
# keeps the median default q_iter result on 2Wiki under 1,500 tokens in each channel (docs/mcp.md).
COMPACT_TEXT_TOKENS = 160
# A passage that runs past the cut by no more than this many tokens is shown whole: cutting it
# saved a few tokens and cost the agent a read_document call for the last clause (a new user's
# passage was cut with 41 characters left, issue 30). Kept small: such a passage gains at most this
# much text and loses the `more` object and the " …"; measured on 2Wiki it moved no median
# (docs/mcp.md).
COMPACT_TEXT_SLACK = 16


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


class MoreText(_Lean):
    """The rest of a passage cut for size: characters `start` to `end` of its document, which
    `read_document(doc_id, start=start)` reads (or, for a document indexed without character
    spans, `read_document(chunk_id=…)`); `chars` left out."""

    chars: int
    start: int | None = None
    end: int | None = None


class CompactHit(BaseModel):
    rank: int
    title: str
    doc_id: str
    chunk_id: str
    score: float
    text: str  # cut at COMPACT_TEXT_TOKENS, then `more` says where the rest is
    more: MoreText | None = None
    why: str  # what brought the chunk in, in words
    path: list[CompactStep] = []  # its best kept path
    citation: CompactCitation | None = None
    uri: str | None = None  # the document as a resource; None for an id no URI can carry

    @model_serializer(mode="wrap")
    def _without_empty_extras(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        if dumped.get("more") is None:
            dumped.pop("more", None)  # most passages are whole: no `"more": null` on each
        if not dumped.get("path"):
            dumped.pop("path", None)  # no kept path reached it, which `why` says in words
        return dumped


class LinkedHit(ExplainedHit):
    """A hit at `detail="full"`: the engine's, with its document's resource URI."""

    uri: str | None = None


class LinkedResult(ExplainedResult):
    """Retrieval at `detail="full"`: the engine's result, each hit with its URI."""

    chunks: list[LinkedHit]  # type: ignore[assignment]


class LinkedAnswer(AnswerResult):
    """An answer at `detail="full"`: the engine's, each hit with its URI."""

    chunks: list[LinkedHit]  # type: ignore[assignment]


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


def hit_uri(corpus: str, doc_id: str) -> str | None:
    """The resource URI a hit's document is read through (as its resource link says)."""
    return document_uri(corpus, doc_id) if linkable(doc_id) else None


def _linked(corpus: str, hits: Sequence[ExplainedHit]) -> list[LinkedHit]:
    return [LinkedHit(**dict(h), uri=hit_uri(corpus, h.doc_id)) for h in hits]


def _cut_text(hit: ChunkHit, text_tools: TextTools | None) -> tuple[str, MoreText | None]:
    """The passage's text within COMPACT_TEXT_TOKENS, and where the rest is when it was cut."""
    if text_tools is None:
        return hit.text, None
    if text_tools.count_tokens(hit.text) <= COMPACT_TEXT_TOKENS + COMPACT_TEXT_SLACK:
        return hit.text, None
    kept = text_tools.head(hit.text, COMPACT_TEXT_TOKENS)
    if kept == hit.text:
        return kept, None
    at = hit.citation.start if hit.citation is not None else None
    end = hit.citation.end if hit.citation is not None else None
    more = MoreText(chars=len(hit.text) - len(kept), start=None if at is None else at + len(kept), end=end)
    return kept + " …", more


def _compact_hits(
    corpus: str, hits: Sequence[ExplainedHit], *, brief: bool = True, text_tools: TextTools | None = None
) -> list[CompactHit]:
    cut = [_cut_text(hit, text_tools) for hit in hits]
    shown = [text for text, _ in cut]
    return [
        CompactHit(
            rank=rank,
            title=hit.title,
            doc_id=hit.doc_id,
            chunk_id=hit.chunk_id,
            score=round(hit.score, 3),
            text=text,
            more=more,
            # The path is listed beside the sentence, so the sentence need not name its entities.
            why=(hit.why.brief if brief else "") or hit.why.text,
            path=[_compact_step(s, hits, shown) for s in hit.why.path],
            citation=_compact_citation(hit.citation),
            uri=hit_uri(corpus, hit.doc_id),
        )
        for rank, (hit, (text, more)) in enumerate(zip(hits, cut, strict=True), start=1)
    ]


def _compact_step(step: PathStep, hits: Sequence[ChunkHit], shown: Sequence[str]) -> CompactStep:
    """A step pointing to the returned passage whose shown text holds its statement, or its
    statement, cut."""
    held = next(
        (
            r
            for r, (h, text) in enumerate(zip(hits, shown, strict=True), start=1)
            if h.title == step.title and step.unit in text
        ),
        None,
    )
    if held is not None:
        return CompactStep(via=step.label, passage=held)
    return CompactStep(via=step.label, unit=_cut(step.unit, _STEP_CHARS), title=step.title)


def _compact_citation(citation: Citation | None) -> CompactCitation | None:
    if citation is None:
        return None
    return CompactCitation(source=citation.source, section=citation.section, pages=citation.pages)


def compact_result(result: ExplainedResult, text_tools: TextTools | None = None) -> CompactResult:
    return CompactResult(
        corpus=result.corpus,
        query=result.query,
        method=result.method,
        chunks=_compact_hits(result.corpus, result.chunks, text_tools=text_tools),
        elapsed_ms=result.elapsed_ms,
        note=result.note,
    )


def shaped_result(
    result: ExplainedResult, detail: str, text_tools: TextTools | None = None
) -> CompactResult | LinkedResult:
    """The result at `detail`; `text_tools` (the engine's tokenizer) cuts compact passages for size,
    none leaves them whole."""
    if detail == "compact":
        return compact_result(result, text_tools)
    return LinkedResult(**{**dict(result), "chunks": _linked(result.corpus, result.chunks)})


def shaped_answer(
    result: AnswerResult, detail: str, text_tools: TextTools | None = None
) -> CompactAnswer | LinkedAnswer:
    if detail == "compact":
        return compact_answer(result, text_tools)
    return LinkedAnswer(**{**dict(result), "chunks": _linked(result.corpus, result.chunks)})


def compact_answer(result: AnswerResult, text_tools: TextTools | None = None) -> CompactAnswer:
    return CompactAnswer(
        corpus=result.corpus,
        question=result.question,
        answer=result.answer,
        method=result.method,
        chunks=_compact_hits(result.corpus, result.chunks, text_tools=text_tools),
        llm_tokens=sum(u.prompt_tokens + u.completion_tokens for u in result.llm_usage.values()),
        elapsed_ms=result.elapsed_ms,
    )


# ---- text content ---------------------------------------------------------------------------------


def _cite_line(hit: CompactHit) -> str | None:
    """Where the hit sits and how to open its document: the structured citation and URI, in words."""
    parts: list[str] = []
    if hit.citation is not None:
        place = " › ".join([hit.citation.source, *hit.citation.section])
        pages = ", ".join(str(p) for p in hit.citation.pages)
        parts.append(f"{place}, p. {pages}" if pages else place)
    if hit.uri is not None:
        parts.append(hit.uri)
    return "cite: " + " · ".join(parts) if parts else None


def _more_line(hit: CompactHit) -> str:
    """Where the rest of a cut passage is, as the structured `more` says."""
    assert hit.more is not None
    if hit.more.start is None:
        return f"(cut: {hit.more.chars} more characters: read_document(chunk_id={json.dumps(hit.chunk_id)}))"
    return (
        f"(cut: characters {hit.more.start}-{hit.more.end} of the document: "
        f"read_document(doc_id={json.dumps(hit.doc_id, ensure_ascii=False)}, start={hit.more.start}))"
    )


def _hits_text(hits: list[CompactHit]) -> list[str]:
    lines: list[str] = []
    for h in hits:
        lines.append(f"[{h.rank}] {h.title or '(untitled)'} (doc {h.doc_id}, chunk {h.chunk_id}) score {h.score:.3f}")
        cite = _cite_line(h)
        if cite is not None:
            lines.append(cite)
        lines.append(f"why: {h.why}")
        for step in h.path:
            held = f"in [{step.passage}]" if step.passage is not None else f"{step.unit} ({step.title})"
            lines.append(f"  via {step.via}: {held}")
        lines.append(h.text)
        if h.more is not None:
            lines.append(_more_line(h))
        lines.append("")
    return lines


def _retrieval_text(result: CompactResult | ExplainedResult) -> str:
    # At detail="full" the reasons are given whole (the structured content has them so).
    hits = (
        result.chunks if isinstance(result, CompactResult) else _compact_hits(result.corpus, result.chunks, brief=False)
    )
    head = (
        f"{result.method} on {result.corpus}: {counted(len(hits), 'chunk')} for {result.query!r} "
        f"({result.elapsed_ms:.0f} ms)"
    )
    lines = [head, "", *([result.note, ""] if result.note else []), *_hits_text(hits)]
    if isinstance(result, ExplainedResult) and result.trace is not None:
        t = result.trace
        lines.append(
            f"trace: query entities {', '.join(t.query_entities) or 'none'}; {len(t.depths)} depths, "
            f"{sum(len(d.paths) for d in t.depths)} kept paths, {t.candidate_chunks} candidate chunks "
            "(every path is in the structured content)"
        )
    return "\n".join(lines).rstrip()


def _answer_text(result: CompactAnswer | AnswerResult) -> str:
    hits = result.chunks if isinstance(result, CompactAnswer) else _compact_hits(result.corpus, result.chunks)
    lines = [f"answer: {result.answer}", "", "from:"]
    for h in hits:
        lines.append(f"[{h.rank}] {h.title} (doc {h.doc_id}) — {h.why}")
        cite = _cite_line(h)
        if cite is not None:
            lines.append(f"  {cite}")
    return "\n".join(lines)


def _document_text(doc: DocumentText) -> str:
    """A document window as text: one line of where it is, then the text itself, not JSON-escaped
    (the structured content has it as JSON)."""
    pages = f", pages {', '.join(str(p) for p in doc.pages)}" if doc.pages else ""
    head = f"{doc.title or doc.doc_id} ({doc.source}): characters {doc.start}-{doc.end} of {doc.total_chars}{pages}"
    if doc.next_start is not None:
        head += f"; next: read_document(doc_id={json.dumps(doc.doc_id, ensure_ascii=False)}, start={doc.next_start})"
    return f"{head}\n\n{doc.text}"


def _documents_text(page: DocumentPage) -> str:
    """A page of documents, one a line (id, title and source quoted as JSON strings: they may hold
    anything, a line break or a control character included)."""
    head = f"{len(page.documents)} of {page.total} documents of {page.corpus}"
    if page.next_cursor is not None:
        head += f"; next page: cursor={json.dumps(page.next_cursor)}"
    lines = [head]
    for d in page.documents:
        shown = [json.dumps(v, ensure_ascii=False) for v in (d.doc_id, d.title, d.source)]
        tags = f", tags {json.dumps(d.tags, ensure_ascii=False)}" if d.tags else ""
        lines.append(f"- {shown[0]}: {shown[1]} (source {shown[2]}, {d.format}, {counted(d.chunks, 'chunk')}{tags})")
    return "\n".join(lines)


def render_text(result: BaseModel) -> str:
    """The text content of a tool result: a readable rendering where one is worth having, else
    the JSON (small results, whose structure is the point)."""
    if isinstance(result, DocumentText):
        return _document_text(result)
    if isinstance(result, CompactResult | ExplainedResult):
        return _retrieval_text(result)
    if isinstance(result, CompactAnswer | AnswerResult):
        return _answer_text(result)
    if isinstance(result, DocumentPage):
        return _documents_text(result)
    if isinstance(result, GlobalSearchResult):
        return global_search_text(result)
    if isinstance(result, ThemeListing):
        return themes_text(result)
    if isinstance(result, IndexReport):
        return index_text(result)
    return json.dumps(result.model_dump(mode="json"), ensure_ascii=False)
