"""`list_corpora`: what can be searched."""

from __future__ import annotations

from mcp.server.mcpserver import Context
from pydantic import BaseModel

from cuerag import CorpusInfo
from tools.common import READ_ONLY, AppState, run_engine, state_of, tool


class CorporaResult(BaseModel):
    corpora: list[CorpusInfo]


@tool("list_corpora", "List corpora", READ_ONLY)
async def list_corpora(ctx: Context[AppState]) -> CorporaResult:
    """Lists what can be searched: each corpus, its size and what it holds."""
    engine = state_of(ctx).engine

    def run() -> CorporaResult:
        return CorporaResult(corpora=[engine.info(name) for name in engine.corpora()])

    return await run_engine(run)
