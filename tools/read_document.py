"""`read_document`: a document's extracted text, whole (a page at a time) or around a chunk, so an
agent can quote more than the chunk it found."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from cuerag.document_text import DocumentText
from tools.common import READ_ONLY, AppState, Corpus, run_engine, state_of, tool


@tool("read_document", "Read a document", READ_ONLY)
async def read_document(
    corpus: Corpus,
    ctx: Context[AppState],
    doc_id: Annotated[str | None, Field(max_length=256, description="The document's id (`doc_id` of any hit).")] = None,
    chunk_id: Annotated[
        str | None, Field(max_length=64, description="A chunk id: return the text around this chunk.")
    ] = None,
    start: Annotated[int, Field(ge=0, description="Character offset to read from (whole-document reads).")] = 0,
    max_chars: Annotated[int, Field(ge=1, le=100_000, description="Most characters returned.")] = 20_000,
    context: Annotated[
        int, Field(ge=0, le=50_000, description="Characters before and after the chunk (with chunk_id).")
    ] = 1_000,
) -> DocumentText:
    """Read a document of a corpus as it was extracted: give `doc_id` to read it from `start`
    (`max_chars` at a time; `end` < `total_chars` means there is more), or `chunk_id` for the
    chunk with `context` characters either side. Offsets are the ones in hits' citations
    (`citation.start`/`end`); `pages` are the PDF pages the returned text spans, `sections`
    where each section starts."""
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
