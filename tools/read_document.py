"""`read_document`: a document's extracted text, whole (a page at a time) or around a chunk, so an
agent can quote more than the chunk it found."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from cuerag.graph.document_text import DocumentText
from tools.common import READ_ONLY, AppState, Corpus, run_engine, state_of, tool

MAX_WINDOW = 40_000


@tool("read_document", "Read a document", READ_ONLY)
async def read_document(
    corpus: Corpus,
    ctx: Context[AppState],
    doc_id: Annotated[str | None, Field(max_length=256, description="A hit's doc_id.")] = None,
    chunk_id: Annotated[str | None, Field(max_length=64, description="Read around this chunk.")] = None,
    start: Annotated[int, Field(ge=0, description="First character.")] = 0,
    # Claude Code saves a result over 25k tokens (or 50,000 characters) to a file and shows the
    # model a pointer: 40,000 characters (about 10k tokens) a window keeps under it; `next_start`
    # says where the next window starts.
    max_chars: Annotated[int, Field(ge=1, le=MAX_WINDOW, description="Most characters.")] = 20_000,
    context: Annotated[int, Field(ge=0, le=50_000, description="Characters around the chunk.")] = 1_000,
) -> DocumentText:
    """Reads a document's text from `start` (a window at a time: next_start), or around a chunk."""
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
