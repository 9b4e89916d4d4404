"""What retrieval returns: the nodes the stepwise tools hand out, Q-Iter's trace, and the ranked
chunks every method returns. The field names are the tools' output schemas: keep them stable."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from cuerag.graph.citations import Citation, citation_of

if TYPE_CHECKING:  # results are read without the graph's code (a CLI query answered by a server)
    from cuerag.graph.snapshot import Graph


class Anchor(BaseModel):
    """An entity node Q-Iter starts from, and why."""

    entity_id: str
    name: str
    source: Literal["query_entity", "unit"]
    mention: str  # the query's mention, or the text of the unit that mentions the entity
    score: float


class UnitNode(BaseModel):
    """A knowledge unit with its edges."""

    unit_id: str
    text: str
    entity_ids: list[str]
    entity_names: list[str]
    chunk_ids: list[str]


class UnitHit(UnitNode):
    score: float


class ChunkNode(BaseModel):
    """A chunk with its units in reading order."""

    chunk_id: str
    doc_id: str
    title: str
    text: str
    unit_ids: list[str]
    citation: Citation | None = None  # source, pages, section, span and hyperlinks of the chunk


class EntityRef(BaseModel):
    entity_id: str
    name: str
    label: str


class EntityExpansion(BaseModel):
    """One traversal step from an entity: its units ranked against a query vector, and the other
    entities those units mention (the next anchors)."""

    entity: EntityRef
    link_score: float  # 1.0 for an id or exact name; the name's similarity otherwise
    units: list[UnitHit]
    next_anchors: list[EntityRef]
    degree: int  # how many units mention the entity in all


HopKind = Literal["entity", "hyperlink", "title"]


class PathTrace(BaseModel):
    """One kept path: its units in the order they were reached, what each step came through (an
    entity's name, or the title of the document a hyperlink or a title mention led to, as
    `via_kinds` says), the entities the last unit offers as next anchors, and the reranker's score."""

    unit_ids: list[str]
    unit_texts: list[str]
    via_entities: list[str]
    via_kinds: list[HopKind] = []  # per step: an entity hop, or a link edge (see cuerag.retrieval.link_edges)
    next_anchors: list[str]
    score: float


class DepthTrace(BaseModel):
    depth: int
    candidates: int
    paths: list[PathTrace]


class TitleStep(BaseModel):
    """Link evidence that set a candidate's score: the question names its title
    (`named_in_query`), a passage among the best names it (`title_link`, from that chunk) or links
    to its document (`hyperlink`), it is another section of a short note one of the best is part
    of (`note_section`), or a passage among the best shares an entity with it (`entity_link`, from
    that chunk, through `entity`); weighed by how specific the title or entity is in the corpus (1
    for a hyperlink or a note's section)."""

    chunk_id: str
    title: str
    kind: Literal["named_in_query", "title_link", "hyperlink", "note_section", "entity_link"]
    from_chunk_id: str | None = None
    entity: str | None = None
    specificity: float
    score: float


class QIterTrace(BaseModel):
    query_entities: list[str]
    entity_source: Literal["ner", "llm"] = "ner"  # who read the entities in the query
    anchors: list[Anchor]
    depths: list[DepthTrace]
    collected_units: int
    candidate_chunks: int  # all the final rerank scored: reached by the walk, named, linked
    named_chunks: int = 0  # of the candidates, those the query names by title
    linked_chunks: int = 0  # of the candidates, those whose score a title link set last
    entity_linked_chunks: int = 0  # of the candidates, those whose score an entity link set last
    lexical_weight: float = 0.0  # the lexical channel's weight for this query (see lexical_adaptive)
    link_bridge: float = 0.0  # the entity links' bridge weight for this query (see QIterParams.link_bridge)
    # Title and entity link evidence, in the order it was applied (a later step may raise a chunk
    # an earlier one set).
    title_steps: list[TitleStep] = []
    stage_ms: dict[str, float] = {}  # where the time went: ner, entity_linking, anchor_units, beam, rerank, ...


# How a linked chunk joined the final rerank from one of the best passages (`ChunkHit.linked_kind`).
LinkedKind = Literal["title", "hyperlink", "note_section", "entity"]

HitSource = Literal["graph", "dense", "bm25", "hybrid", "ketrag", "global", "archrag", "leanrag"]


class ChunkHit(BaseModel):
    chunk_id: str
    doc_id: str
    title: str
    text: str
    score: float
    source: HitSource  # what found it
    unit_ids: list[str] = []  # collected units this chunk holds (why it came back)
    linked_from: str | None = None  # the chunk whose title or entity link set the score
    linked_via: str | None = None  # the entity an entity link came through (None for a title link)
    linked_kind: LinkedKind | None = None  # how linked_from brought it in (None: not linked)
    named_in_query: bool = False  # the query names this chunk's title
    lexical_match: bool = False  # one of the best BM25 chunks, joined though no kept path reached it
    citation: Citation | None = None  # source, pages, section, span and hyperlinks of the chunk


Method = Literal["qiter", "dense", "bm25", "hybrid", "ketrag", "global", "archrag", "leanrag"]
METHODS: tuple[str, ...] = ("qiter", "dense", "bm25", "hybrid", "ketrag", "global", "archrag", "leanrag")


class RetrievalResult(BaseModel):
    corpus: str
    query: str
    method: Method
    chunks: list[ChunkHit]
    trace: QIterTrace | None = None
    elapsed_ms: float
    note: str | None = None  # why there are no chunks, when a filter selected no document


def chunk_hit(
    graph: Graph,
    c: int,
    score: float,
    source: HitSource,
    units: Sequence[int] = (),
    linked_from: int | None = None,
    named_in_query: bool = False,
    linked_via: str | None = None,
    lexical_match: bool = False,
    linked_kind: LinkedKind | None = None,
) -> ChunkHit:
    """A retrieved chunk, with what brought it: collected units, a title link, the query's words."""
    return ChunkHit(
        chunk_id=graph.chunk_ids[c],
        doc_id=graph.chunk_docs[c],
        title=graph.chunk_titles[c],
        text=graph.chunk_texts[c],
        score=round(float(score), 6),
        source=source,
        unit_ids=[graph.unit_ids[u] for u in units],
        linked_from=None if linked_from is None else graph.chunk_ids[linked_from],
        linked_via=linked_via,
        linked_kind=linked_kind,
        named_in_query=named_in_query,
        lexical_match=lexical_match,
        citation=citation_of(graph, c),
    )
