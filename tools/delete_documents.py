"""`delete_documents`: remove documents from a corpus (destructive)."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from cuerag.engine.reports import DeleteReport
from tools.common import AppState, Corpus, run_engine, state_of, tool


@tool(
    "delete_documents",
    "Delete documents",
    ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False),
    write=True,
)
async def delete_documents(
    corpus: Corpus,
    doc_ids: Annotated[list[str], Field(min_length=1, max_length=10_000, description="Documents to delete.")],
    ctx: Context[AppState],
) -> DeleteReport:
    """Delete documents and what only they hold; final."""
    state = state_of(ctx)
    if state.jobs.busy(corpus, watch_ok=True):
        # Refused with the job to wait for: the engine would say the corpus is busy, or, during its
        # first run, that it is unknown, which sends the agent looking for a typo. A watch writes
        # only while it syncs, and the engine refuses a delete that meets a sync.
        state.jobs.refuse_if_busy(corpus, exists=corpus in await run_engine(state.engine.corpora), watch_ok=True)
    return await run_engine(state.engine.delete_documents, corpus, doc_ids)
