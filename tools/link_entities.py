"""`link_entities`: the query's named entities linked to entity nodes (spreading activation)."""

from __future__ import annotations

from mcp.server.mcpserver import Context
from pydantic import BaseModel

from cuerag.retrieval.results import Anchor
from tools.common import READ_ONLY, AppState, Corpus, Filter, Query, TopK, run_engine, state_of, tool

# A 4,000-character query can name hundreds of entities, each linked to up to 50 nodes: 614 KB at
# the maxima. The first mentions are linked, and the result says how many were left out.
MAX_MENTIONS = 20
MAX_ANCHORS = 200


class LinkResult(BaseModel):
    corpus: str
    query: str
    mentions: list[str]
    anchors: list[Anchor]
    note: str | None = None  # why there are no anchors, when the filter selected no document


@tool("link_entities", "Link query entities", READ_ONLY, stepwise=True)
async def link_entities(
    corpus: Corpus, query: Query, ctx: Context[AppState], k: TopK = 3, filter: Filter = None
) -> LinkResult:
    """Finds the entities a question names, each with its k nearest graph entities."""
    engine = state_of(ctx).engine

    def run() -> LinkResult:
        retriever = engine.retriever(corpus, filter)
        found = retriever.query_mentions(query)
        mentions = found[:MAX_MENTIONS]
        anchors = retriever.link_mentions(mentions, k)[:MAX_ANCHORS]
        note = retriever.note
        if len(found) > len(mentions):
            left = f"the query names {len(found)} entities; the first {MAX_MENTIONS} are linked"
            note = f"{note}; {left}" if note else left
        return LinkResult(corpus=corpus, query=query, mentions=mentions, anchors=anchors, note=note)

    return await run_engine(run)
