"""Why each retrieved chunk came back, in words a reader understands: the kept path that reached
it, the title the question names, the chunk whose text names it (a title link) or shares an entity
with it (an entity link), or the dense fill.

Retrieval records this as ids and flags (`unit_ids`, `linked_from`, `linked_via`, `named_in_query`,
`source`);
this module turns them into titles and sentences for the CLI, its JSON and the MCP tools, so that
no reader has to resolve a UUID to learn why a passage is there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel

from cuerag.retrieval.results import ChunkHit, HopKind, PathTrace, QIterTrace, RetrievalResult
from cuerag.text.entities import same_entity

if TYPE_CHECKING:  # results are read without the graph's code (a CLI query answered by a server)
    from cuerag.graph.snapshot import Graph

ReasonKind = Literal[
    "path",
    "named_in_query",
    "title_link",
    "hyperlink",
    "note_section",
    "entity_link",
    "lexical_match",
    "dense_fill",
    "dense",
    "bm25",
    "hybrid",
    "ketrag",
    "global",
    "archrag",
    "leanrag",
]

_BASELINE_REASONS = {
    "dense": "nearest to the question by embedding similarity (dense retrieval)",
    "bm25": "shares the question's words (BM25)",
    "hybrid": "ranked high by embedding similarity and BM25 together (reciprocal rank fusion)",
    "ketrag": "close to the question's keywords (KET-RAG's keyword channel)",
    "global": "relevant to the question, in a theme (community of documents) the question is about",
    "archrag": "under an entity or community nearest the question (ArchRAG's hierarchical search)",
    "leanrag": "holds the question's seed entities or sits under their common ancestors (LeanRAG)",
}


class PathStep(BaseModel):
    """One hop of a kept path: what it came through (an entity, or a hyperlink or title mention
    leading to the titled document) and the statement it reached."""

    via: str
    unit: str
    title: str  # the title of the passage that holds the statement
    kind: HopKind = "entity"

    @property
    def label(self) -> str:
        return hop_label(self.kind, self.via)


def hop_label(kind: HopKind, via: str) -> str:
    """A hop as a reader reads it: the entity's name, or the link edge and where it led."""
    if kind == "hyperlink":
        return f"hyperlink to {_quoted(via)}"
    if kind == "title":
        return f"title {_quoted(via)} named"
    return via


class Explainable(Protocol):
    """What a reason is read from: a retrieval's method, its chunks and Q-Iter's trace."""

    @property
    def method(self) -> str: ...

    @property
    def chunks(self) -> Sequence[ChunkHit]: ...

    @property
    def trace(self) -> QIterTrace | None: ...


class HitReason(BaseModel):
    """What brought a chunk in, as a sentence (`text`) and as data. `brief` is the sentence without
    the path's entities, for a reader shown the path itself beside it."""

    kind: ReasonKind
    text: str
    brief: str = ""
    path: list[PathStep] = []  # the best kept path through the chunk, when the walk reached it
    path_score: float | None = None
    linked_from_title: str | None = None  # the passage whose text names this one's title or shares the entity


class ExplainedHit(ChunkHit):
    why: HitReason


class ExplainedResult(RetrievalResult):
    """A retrieval result whose every chunk says why it is there."""

    chunks: list[ExplainedHit]  # type: ignore[assignment]


class GraphTitles:
    """Titles of a snapshot's chunks and units, for naming them instead of giving their ids."""

    def __init__(self, graph: Graph) -> None:
        self._graph = graph

    def chunk(self, chunk_id: str) -> str:
        pos = self._graph.chunk_pos.get(chunk_id)
        return self._graph.chunk_titles[pos] if pos is not None else "(a passage since deleted)"

    def unit(self, unit_id: str) -> str:
        """The title of the passage holding a unit (the first one, if several hold it)."""
        pos = self._graph.unit_pos.get(unit_id)
        chunks = self._graph.unit_chunks[pos] if pos is not None else []
        return self._graph.chunk_titles[chunks[0]] if chunks else "(a passage since deleted)"


def best_path(hit: ChunkHit, result: Explainable) -> PathTrace | None:
    """The highest-scoring kept path (at any depth) through one of the hit's units; on a tie the
    shorter one, which says the same in fewer hops."""
    if result.trace is None or not hit.unit_ids:
        return None
    held = set(hit.unit_ids)
    paths = [p for d in result.trace.depths for p in d.paths if held.intersection(p.unit_ids)]
    return max(paths, key=lambda p: (p.score, -len(p.unit_ids)), default=None)


def _quoted(title: str) -> str:
    return f"“{title}”" if title else "an untitled passage"


def _entity_link_reason(entity: str, source: str, title: str) -> str:
    """How an entity link reads: the entity shared, or, when the entity is one of the two
    passages' own subject, which passage names which ("shares “X” with “X”" said nothing)."""
    best = "one of the best passages"
    if same_entity(entity, source):
        return f"it names {_quoted(entity)}, the subject of {_quoted(source)}, {best}"
    if same_entity(entity, title):
        return f"{_quoted(source)}, {best}, names {_quoted(entity)}, the subject of this passage"
    return f"it shares {_quoted(entity)} with {_quoted(source)}, {best}"


def _kinds(path: PathTrace) -> list[HopKind]:
    """Each step's kind; a trace from before link hops has entity hops only."""
    return path.via_kinds or ["entity"] * len(path.via_entities)


def explain_hit(hit: ChunkHit, result: Explainable, titles: GraphTitles) -> HitReason:
    """One hit's reason. A chunk can have several (a named title the walk reached as well): the
    sentence gives the one that set its score first, then the others. `brief` is the same sentence
    without the path's entities, for a reader shown the path itself beside it."""
    path = best_path(hit, result)
    steps = (
        [
            PathStep(via=via, unit=text, title=titles.unit(uid), kind=kind)
            for via, text, uid, kind in zip(
                path.via_entities, path.unit_texts, path.unit_ids, _kinds(path), strict=True
            )
        ]
        if path is not None
        else []
    )
    score = path.score if path is not None else None
    if path is None:
        reason = _reason(hit, result, titles, steps, score, walked="")
        reason.brief = reason.text
        return reason
    walked = f"the graph walk reached it through {' → '.join(s.label for s in steps)} (path score {score:.3f})"
    reason = _reason(hit, result, titles, steps, score, walked=walked)
    # The walk's sentence is the only part that names the path: the brief form drops just that.
    reason.brief = reason.text.replace(walked, f"the graph walk reached it (path score {score:.3f})")
    return reason


def _reason(
    hit: ChunkHit,
    result: Explainable,
    titles: GraphTitles,
    steps: list[PathStep],
    score: float | None,
    *,
    walked: str,
) -> HitReason:
    if hit.source != "graph":
        if result.method == "qiter":
            n = len(result.chunks)
            text = f"dense fill: the graph reached fewer than {n} passages, so the nearest by embedding filled the list"
            return HitReason(kind="dense_fill", text=text)
        return HitReason(kind=hit.source, text=_BASELINE_REASONS[hit.source])
    if hit.named_in_query:
        text = f"the question names its title {_quoted(hit.title)}"
        text = f"{text}; {walked}" if walked else text
        return HitReason(kind="named_in_query", text=text, path=steps, path_score=score)
    if hit.linked_from is not None:
        source = titles.chunk(hit.linked_from)
        if hit.linked_via is not None:
            kind: ReasonKind = "entity_link"
            text = f"entity link: {_entity_link_reason(hit.linked_via, source, hit.title)}"
        elif hit.linked_kind == "hyperlink":
            kind = "hyperlink"
            text = f"hyperlink: {_quoted(source)}, one of the best passages, links to {_quoted(hit.title)}"
        elif hit.linked_kind == "note_section":
            kind = "note_section"
            text = f"note section: another part of {_quoted(source)}, one of the best passages"
        else:
            kind = "title_link"
            text = f"title link: {_quoted(source)}, one of the best passages, names its title {_quoted(hit.title)}"
        return HitReason(
            kind=kind,
            text=f"{text}; {walked}" if walked else text,
            path=steps,
            path_score=score,
            linked_from_title=source,
        )
    if walked:  # a kept path reached it
        return HitReason(kind="path", text=walked, path=steps, path_score=score)
    if hit.lexical_match:
        text = "lexical match: one of the passages sharing the question's words most (BM25); no kept path reached it"
        return HitReason(kind="lexical_match", text=text)
    # Every graph candidate comes from a kept path, a named title, a link or a lexical match; a result
    # built by other code (or an older server) may still lack all three, and says so.
    return HitReason(kind="path", text="no kept path, named title, title link or lexical match is recorded for it")


def explained_hits(result: Explainable, titles: GraphTitles) -> list[ExplainedHit]:
    """Every chunk of a result with its reason, read against the snapshot the result came from."""
    hits = []
    for h in result.chunks:
        why = explain_hit(h, result, titles)
        hits.append(ExplainedHit(**h.model_dump(exclude={"why"}), why=why))
    return hits


def explain(result: RetrievalResult, titles: GraphTitles) -> ExplainedResult:
    """The result with a reason on every chunk."""
    return ExplainedResult(**result.model_dump(exclude={"chunks"}), chunks=explained_hits(result, titles))
