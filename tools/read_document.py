"""`read_document`: a document's extracted text, whole (a page at a time) or around a chunk, so an
agent can quote more than the chunk it found."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from cuerag.graph.document_text import DocumentText
from tools.common import READ_ONLY, AppState, Corpus, run_engine, state_of, tool


@tool("read_document", "Read a document", READ_ONLY)
async def read_document(
    corpus: Corpus,
    ctx: Context[AppState],
    doc_id: Annotated[str | None, Field(max_length=256, description="A hit's doc_id.")] = None,
    chunk_id: Annotated[str | None, Field(max_length=64, description="Read around this chunk.")] = None,
    start: Annotated[int, Field(ge=0, description="First character.")] = 0,
    max_chars: Annotated[int, Field(ge=1, le=100_000, description="Most characters.")] = 20_000,
    context: Annotated[int, Field(ge=0, le=50_000, description="Characters around the chunk.")] = 1_000,
) -> DocumentText:
    """A document's text from `start`, or around a chunk."""
    if doc_id is None and chunk_id is None:
        raise ToolError("give `doc_id` (the whole document) or `chunk_id` (the text around a chunk)")
    engine = state_of(ctx).engine
    return await run_engine(
        engine.read_document,
        corpus,
        doc_id,
        chunk_id=chunk_id,
        start=start,
        max_chars=max_chars,
        context=context,
    )
