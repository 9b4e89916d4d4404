"""`get_chunks` and `get_units`: fetch nodes by id."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from cuerag import ParameterError
from cuerag.retrieval import ChunkNode, UnitNode
from tools.common import READ_ONLY, AppState, Corpus, run_engine, state_of, tool

Ids = Annotated[list[str], Field(min_length=1, max_length=200, description="Node ids from earlier results.")]


class ChunksResult(BaseModel):
    corpus: str
    chunks: list[ChunkNode]


class UnitsResult(BaseModel):
    corpus: str
    units: list[UnitNode]


def _unknown(kind: str, ids: list[str]) -> ParameterError:
    return ParameterError(f"unknown {kind} id(s): {', '.join(ids[:5])}; use ids returned by this corpus's tools")


@tool("get_chunks", READ_ONLY)
async def get_chunks(corpus: Corpus, ids: Ids, ctx: Context[AppState]) -> ChunksResult:
    """Full text of chunks by id, with their title, document id and units in reading order."""
    engine = state_of(ctx).engine

    def run() -> ChunksResult:
        r = engine.retriever(corpus)
        missing = [i for i in ids if i not in r.graph.chunk_pos]
        if missing:
            raise _unknown("chunk", missing)
        return ChunksResult(corpus=corpus, chunks=[r.chunk_node(r.graph.chunk_pos[i]) for i in ids])

    return await run_engine(run)


@tool("get_units", READ_ONLY)
async def get_units(corpus: Corpus, ids: Ids, ctx: Context[AppState]) -> UnitsResult:
    """Knowledge units by id, with the entities they mention and the chunks that hold them."""
    engine = state_of(ctx).engine

    def run() -> UnitsResult:
        r = engine.retriever(corpus)
        missing = [i for i in ids if i not in r.graph.unit_pos]
        if missing:
            raise _unknown("unit", missing)
        return UnitsResult(corpus=corpus, units=[r.unit_node(r.graph.unit_pos[i]) for i in ids])

    return await run_engine(run)
