"""`index_corpus`: add files or inline documents to a corpus, with progress notifications."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import anyio.from_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from cuerag import Document, IndexReport, InputError, load_paths, make_document
from cuerag.formats.reading import limits_of
from tools.common import AppState, Corpus, run_engine, state_of, tool

# Indexing stages in the order the engine runs them; progress is reported over all of them.
_STAGES = ("split", "ner", "embed entities", "embed units", "embed chunks", "store")
_LLM_STAGES = ("split", "extract", *_STAGES[1:])  # at α > 0 the LLM works between split and NER


class DocumentInput(BaseModel):
    # A misspelt key (`doc_id`, `titel`) would otherwise be dropped without a word.
    model_config = ConfigDict(extra="forbid")

    title: str = Field(default="", max_length=1000, description="Document title (kept with every chunk).")
    text: str = Field(min_length=1, max_length=20_000_000, description="Document text (at most 20M characters).")
    id: str | None = Field(default=None, max_length=256, description="Stable id; default: hash of title + text.")


def check_allowed(path: str, roots: list[Path]) -> Path:
    """Resolve a path (symlinks included) and refuse it unless it lies under an allowed root."""
    if "\x00" in path:  # resolve() would raise a bare ValueError: a crash, not a refusal
        raise InputError(f"path {path!r} holds a NUL character")
    resolved = Path(path).expanduser().resolve()
    for root in roots:
        if resolved.is_relative_to(root.resolve()):
            return resolved
    listed = ", ".join(str(r) for r in roots) or "none configured"
    raise InputError(f"path {path!r} is outside the allowed roots ({listed}); set CUERAG_MCP_ALLOWED_ROOTS")


@tool(
    "index_corpus",
    ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
    write=True,
)
async def index_corpus(
    corpus: Corpus,
    ctx: Context[AppState],
    paths: Annotated[list[str], Field(max_length=1000, description="Files or folders on the server.")] = [],  # noqa: B006
    documents: Annotated[list[DocumentInput], Field(max_length=10_000, description="Inline documents.")] = [],  # noqa: B006
) -> IndexReport:
    """Index documents into a corpus (created if new; added to if it exists). Give server-side
    `paths` (.md, .txt, .rst, .html, .pdf, .docx, .json, .jsonl files or folders, under the allowed
    roots; a file's id is its path relative to the folder given) and/or inline
    `documents`. Unchanged documents are skipped; a document id given again with new text replaces
    the old version. Reports counts added and kept, time per stage and the elapsed time."""
    state = state_of(ctx)
    if not paths and not documents:
        raise ToolError("nothing to index: give `paths` or `documents`")
    portal_progress = _ProgressReporter(ctx, _LLM_STAGES if state.engine.settings.alpha > 0 else _STAGES)

    def run() -> IndexReport:
        docs: list[Document] = []
        if paths:
            # Every file is checked too, on the real path of the descriptor it is read from: a
            # symlink inside an allowed folder may point anywhere, and a file checked by name could
            # be swapped for one before it is read.
            settings = state.engine.settings
            docs.extend(
                load_paths(
                    [check_allowed(p, state.allowed_roots) for p in paths],
                    check=lambda f: check_allowed(str(f), state.allowed_roots),
                    limits=limits_of(settings),
                    max_request_bytes=settings.max_request_bytes,
                )
            )
        docs.extend(make_document(d.title, d.text, d.id) for d in documents)
        return state.engine.index_documents(corpus, docs, progress=portal_progress)

    return await run_engine(run)


class _ProgressReporter:
    """Turns the engine's (stage, done, total) calls, made on a worker thread, into MCP progress
    notifications on the event loop, at most about one per percent."""

    def __init__(self, ctx: Context[AppState], stages: tuple[str, ...]) -> None:
        self._ctx = ctx
        self._stages = stages
        self._last = -1.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        stages = self._stages
        step = stages.index(stage) if stage in stages else len(stages) - 1
        overall = 100.0 * (step + (done / total if total else 1.0)) / len(stages)
        if overall - self._last < 1.0 and done < total:
            return
        self._last = overall
        anyio.from_thread.run(self._ctx.report_progress, round(overall, 1), 100.0, f"{stage} {done}/{total}")
