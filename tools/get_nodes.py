"""`get_chunks` and `get_units`: fetch nodes by id."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from cuerag.retrieval.results import ChunkNode, UnitNode
from tools.common import READ_ONLY, AppState, Corpus, run_engine, state_of, tool

Ids = Annotated[list[str], Field(min_length=1, max_length=200, description="Ids from results.")]


class ChunksResult(BaseModel):
    corpus: str
    chunks: list[ChunkNode]


class UnitsResult(BaseModel):
    corpus: str
    units: list[UnitNode]


@tool("get_chunks", "Get chunks", READ_ONLY)
async def get_chunks(corpus: Corpus, ids: Ids, ctx: Context[AppState]) -> ChunksResult:
    """Gets passages by id: text, title, citation, links."""
    engine = state_of(ctx).engine

    def run() -> ChunksResult:
        return ChunksResult(corpus=corpus, chunks=engine.retriever(corpus).chunks_by_id(ids))

    return await run_engine(run)


@tool("get_units", "Get units", READ_ONLY, stepwise=True)
async def get_units(corpus: Corpus, ids: Ids, ctx: Context[AppState]) -> UnitsResult:
    """Gets statements by id, with their entities and chunks."""
    engine = state_of(ctx).engine

    def run() -> UnitsResult:
        return UnitsResult(corpus=corpus, units=engine.retriever(corpus).units_by_id(ids))

    return await run_engine(run)
