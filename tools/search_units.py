"""`search_units`: semantic search over knowledge units (one step of Q-Iter, done by hand)."""

from __future__ import annotations

from mcp.server.mcpserver import Context
from pydantic import BaseModel

from cuerag.retrieval.results import UnitHit
from tools.common import (
    READ_ONLY,
    AppState,
    Corpus,
    Filter,
    Query,
    SubtractIds,
    TopK,
    UnitIds,
    run_engine,
    state_of,
    tool,
)


class SearchUnitsResult(BaseModel):
    corpus: str
    query: str
    units: list[UnitHit]
    note: str | None = None  # why there are no units, when the filter selected no document


@tool("search_units", "Search units", READ_ONLY, stepwise=True)
async def search_units(
    corpus: Corpus,
    query: Query,
    ctx: Context[AppState],
    k: TopK = 5,
    exclude: UnitIds = [],  # noqa: B006 - pydantic copies defaults; the schema shows []
    subtract: SubtractIds = [],  # noqa: B006
    filter: Filter = None,
) -> SearchUnitsResult:
    """Finds the statements nearest a question, with their entities and chunks."""
    engine = state_of(ctx).engine

    def run() -> SearchUnitsResult:
        retriever = engine.retriever(corpus, filter)
        units = retriever.search_units(query, k, exclude=exclude, subtract=subtract)
        return SearchUnitsResult(corpus=corpus, query=query, units=units, note=retriever.note)

    return await run_engine(run)
