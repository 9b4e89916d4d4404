"""`themes`: browse a corpus's theme hierarchy (list at a level, list under a theme, open one), and
`global_search`: a broad question answered by theme in one call (`cuerag.communities`)."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from cuerag.communities.browse import MAX_THEME_PAGE, ThemeListing
from cuerag.communities.theme_search import MAX_BUDGET_TOKENS, MIN_BUDGET_TOKENS, GlobalSearchResult
from cuerag.config import MAX_QUERY_CHARS
from tools.common import READ_ONLY, AppState, Corpus, run_engine, state_of, tool


@tool("themes", "Browse themes", READ_ONLY)
async def themes(
    corpus: Corpus,
    ctx: Context[AppState],
    theme_id: Annotated[str, Field(max_length=64, description="Theme to open.")] = "",
    level: Annotated[int, Field(ge=0, description="0 = broadest.")] = 0,
    offset: Annotated[int, Field(ge=0, description="From next_offset.")] = 0,
    limit: Annotated[int, Field(ge=1, le=MAX_THEME_PAGE, description="Page size.")] = 20,
) -> ThemeListing:
    """A corpus's themes by size, or one opened (report, cited evidence). For overviews, not facts."""
    engine = state_of(ctx).engine
    return await run_engine(engine.themes, corpus, theme_id=theme_id or None, level=level, offset=offset, limit=limit)


@tool("global_search", "Search by theme", READ_ONLY)
async def global_search(
    corpus: Corpus,
    ctx: Context[AppState],
    query: Annotated[str, Field(max_length=MAX_QUERY_CHARS, description="Empty: top themes.")] = "",
    budget_tokens: Annotated[
        int, Field(ge=MIN_BUDGET_TOKENS, le=MAX_BUDGET_TOKENS, description="Max tokens returned.")
    ] = 2000,
) -> GlobalSearchResult:
    """Broad question across many pages, by theme, cited; q_iter for facts and for a subject's own page."""
    engine = state_of(ctx).engine
    return await run_engine(engine.global_search, corpus, query, budget_tokens=budget_tokens)
