"""`expand_entity`: one traversal step from an entity node to its units."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from cuerag.retrieval.results import EntityExpansion
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


@tool("expand_entity", "Expand an entity", READ_ONLY, stepwise=True)
async def expand_entity(
    corpus: Corpus,
    entity: Annotated[str, Field(min_length=1, max_length=500, description="Id or name.")],
    query: Query,
    ctx: Context[AppState],
    k: TopK = 3,
    exclude: UnitIds = [],  # noqa: B006
    subtract: SubtractIds = [],  # noqa: B006
    filter: Filter = None,
) -> EntityExpansion:
    """One hop: the statements naming an entity, ranked against the question minus `subtract`."""
    engine = state_of(ctx).engine

    def run() -> EntityExpansion:
        return engine.retriever(corpus, filter).expand_entity(entity, query, k, exclude=exclude, subtract=subtract)

    return await run_engine(run)
