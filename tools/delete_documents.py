"""`delete_documents`: remove documents from a corpus (destructive)."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from cuerag.engine import DeleteReport
from tools.common import AppState, Corpus, run_engine, state_of, tool


@tool(
    "delete_documents",
    "Delete documents",
    ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False),
    write=True,
)
async def delete_documents(
    corpus: Corpus,
    doc_ids: Annotated[list[str], Field(min_length=1, max_length=10_000)],
    ctx: Context[AppState],
) -> DeleteReport:
    """Delete documents and what only they hold; final."""
    engine = state_of(ctx).engine
    return await run_engine(engine.delete_documents, corpus, doc_ids)
