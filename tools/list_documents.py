"""`list_documents`: a corpus's documents, a page at a time."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from cuerag.graph.catalog import MAX_PAGE, DocumentPage
from tools.common import READ_ONLY, AppState, Corpus, Filter, run_engine, state_of, tool


@tool("list_documents", "List documents", READ_ONLY)
async def list_documents(
    corpus: Corpus,
    ctx: Context[AppState],
    filter: Filter = None,
    cursor: Annotated[str, Field(max_length=1024, description="A page's next_cursor.")] = "",
    limit: Annotated[int, Field(ge=1, le=MAX_PAGE, description="Page size.")] = 50,
) -> DocumentPage:
    """A corpus's documents, paged; each a readable resource."""
    engine = state_of(ctx).engine
    return await run_engine(engine.list_documents, corpus, filter=filter, cursor=cursor or None, limit=limit)
