"""`get_chunks` and `get_units`: fetch nodes by id."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from cuerag import ParameterError
from cuerag.citations import Citation, citation_of
from cuerag.retrieval import ChunkNode, UnitNode
from tools.common import READ_ONLY, AppState, Corpus, run_engine, state_of, tool

Ids = Annotated[list[str], Field(min_length=1, max_length=200, description="Node ids from earlier results.")]


class CitedChunk(ChunkNode):
    """A chunk with where it came from and where its hyperlinks lead."""

    citation: Citation


class ChunksResult(BaseModel):
    corpus: str
    chunks: list[CitedChunk]


class UnitsResult(BaseModel):
    corpus: str
    units: list[UnitNode]


def _positions(index: dict[str, int], ids: list[str], kind: str) -> list[int]:
    """Graph positions of the ids, in the order given; unknown ids are an error naming them."""
    missing = [i for i in ids if i not in index]
    if missing:
        raise ParameterError(f"unknown {kind} id(s): {', '.join(missing[:5])}; use ids returned by this corpus's tools")
    return [index[i] for i in ids]


@tool("get_chunks", READ_ONLY)
async def get_chunks(corpus: Corpus, ids: Ids, ctx: Context[AppState]) -> ChunksResult:
    """Full text of chunks by id, with their title, document id, units in reading order and
    citation (source file, pages, section heading path, character span, hyperlinks with the corpus
    documents they lead to). For more of the document around a chunk, use read_document."""
    engine = state_of(ctx).engine

    def run() -> ChunksResult:
        r = engine.retriever(corpus)
        return ChunksResult(
            corpus=corpus,
            chunks=[
                CitedChunk(**r.chunk_node(c).model_dump(), citation=citation_of(r.graph, c))
                for c in _positions(r.graph.chunk_pos, ids, "chunk")
            ],
        )

    return await run_engine(run)


@tool("get_units", READ_ONLY)
async def get_units(corpus: Corpus, ids: Ids, ctx: Context[AppState]) -> UnitsResult:
    """Knowledge units by id, with the entities they mention and the chunks that hold them."""
    engine = state_of(ctx).engine

    def run() -> UnitsResult:
        r = engine.retriever(corpus)
        return UnitsResult(corpus=corpus, units=[r.unit_node(u) for u in _positions(r.graph.unit_pos, ids, "unit")])

    return await run_engine(run)
