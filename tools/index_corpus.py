"""`index_corpus`: add files or inline documents to a corpus, with progress notifications."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import anyio.from_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from cuerag import IndexReport, InputError, WalkRules, make_document
from tools.common import AppState, Corpus, run_engine, state_of, tool

log = logging.getLogger(__name__)

# Indexing stages in the order the engine runs them; progress is reported over all of them.
# In the order the engine finishes them; NER runs beside "embed units" and "embed chunks".
_STAGES = ("split", "embed units", "embed chunks", "ner", "embed entities", "store")
_LLM_STAGES = ("split", "extract", *_STAGES[1:])  # at α > 0 the LLM works between split and the rest
_CONCURRENT = frozenset({"ner"})  # its reports interleave with others': they imply nothing about them
_PATHS = "Files or folders under the allowed roots."


# Said to an agent that will relay it to a person: what to do, in the places they can do it.
PATHS_OFF = (
    "reading files by path is turned off on this server: no folder has been allowed. Ask the user to "
    "allow a folder by starting the server with `--allowed-root /path/to/folder` (for Claude Desktop: "
    'add "--allowed-root", "/path/to/folder" to this server\'s "args" in claude_desktop_config.json, '
    "then restart it). Meanwhile, pass the text itself as `documents` (title and text)."
)


class DocumentInput(BaseModel):
    # A misspelt key (`doc_id`, `titel`) would otherwise be dropped without a word.
    model_config = ConfigDict(extra="forbid")

    title: str = Field(default="", max_length=1000, description="Title.")
    text: str = Field(min_length=1, max_length=20_000_000, description="Text.")
    id: str | None = Field(default=None, max_length=256, description="Stable id.")


def check_allowed(path: str, roots: list[Path]) -> Path:
    """Resolve a path (symlinks included) and refuse it unless it lies under an allowed root."""
    if "\x00" in path:  # resolve() would raise a bare ValueError: a crash, not a refusal
        raise InputError(f"path {path!r} holds a NUL character")
    resolved = Path(path).expanduser().resolve()
    for root in roots:
        if resolved.is_relative_to(root.resolve()):
            return resolved
    # The advice is what the agent can do; the roots themselves are the operator's choice.
    if not roots:
        raise InputError(
            f"path {path!r} is outside the allowed roots (this server reads no files): send its text as `documents`"
        )
    listed = ", ".join(str(r) for r in roots)
    raise InputError(
        f"path {path!r} is outside the allowed roots, the folders this server may read ({listed}): "
        "give a path under one of them, or send the text as `documents`"
    )


@tool(
    "index_corpus",
    "Index documents into a corpus",
    ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
    write=True,
)
async def index_corpus(
    corpus: Corpus,
    ctx: Context[AppState],
    paths: Annotated[list[str], Field(max_length=1000, description=_PATHS)] = [],  # noqa: B006
    documents: Annotated[list[DocumentInput], Field(max_length=10_000, description="Inline documents.")] = [],  # noqa: B006
    sync: Annotated[
        bool,
        Field(
            # Documents indexed inline or from other folders are never touched by a sync.
            description="Also delete the documents of files gone from the folders given."
        ),
    ] = False,
    strict: Annotated[
        bool,
        Field(description="Stop at the first unreadable file, writing nothing (default: report it, go on)."),
    ] = False,
    include: Annotated[
        list[str], Field(max_length=100, description="Only files matching these gitignore-style globs.")
    ] = [],  # noqa: B006
    exclude: Annotated[list[str], Field(max_length=100, description="Leave out what these globs match.")] = [],  # noqa: B006
) -> IndexReport:
    """Index server-side `paths` (.md .txt .rst .html .pdf .docx .json .jsonl) and/or inline
    `documents` into a corpus (created if new). A file's id is its path under the folder given: a
    changed file replaces its old version, an unchanged one is skipped. The report lists the files
    added, changed, removed, skipped and failed."""
    state = state_of(ctx)
    if not paths and not documents:
        raise ToolError("nothing to index: give `paths` or `documents`")
    if paths and not state.allowed_roots:
        raise ToolError(PATHS_OFF)
    portal_progress = _ProgressReporter(ctx, _LLM_STAGES if state.engine.settings.alpha > 0 else _STAGES)
    stop_requested = _cancel_check()

    def run() -> IndexReport:
        inline = [make_document(d.title, d.text, d.id) for d in documents]
        if not paths:
            return state.engine.index_documents(corpus, inline, progress=portal_progress, should_stop=stop_requested)
        # Every file found under a folder is checked too: a symlink inside an allowed folder may
        # point anywhere, and checking the folder alone would read what it points to.
        return state.engine.index_paths(
            corpus,
            [check_allowed(p, state.allowed_roots) for p in paths],
            documents=inline,
            sync=sync,
            strict=strict,
            rules=WalkRules(include=tuple(include), exclude=tuple(exclude)),
            check=lambda f: check_allowed(str(f), state.allowed_roots),
            progress=portal_progress,
            should_stop=stop_requested,
        )

    return await run_engine(run)


def _cancel_check() -> Callable[[], bool]:
    """For the engine's worker thread: has this call been cancelled? The SDK cancels the handler
    when the client sends `notifications/cancelled`, and every handler when the client goes away
    (stdin closed, session ended), but a worker thread runs on unless it asks; so the engine asks
    this between stages and batches."""
    cancelled = anyio.get_cancelled_exc_class()  # read here: the worker thread has no event loop

    def stop_requested() -> bool:
        try:
            anyio.from_thread.check_cancelled()
        except cancelled:
            log.warning("index_corpus cancelled by the client; stopping at the next step")
            return True
        return False

    return stop_requested


class _ProgressReporter:
    """Turns the engine's (stage, done, total) calls, made on a worker thread, into MCP progress
    notifications on the event loop, at most about one per percent."""

    def __init__(self, ctx: Context[AppState], stages: tuple[str, ...]) -> None:
        self._ctx = ctx
        self._stages = stages
        self._done: dict[str, float] = {}  # each stage's share done, which only grows
        self._last = -1.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        stages = self._stages
        key = stage if stage in stages else stages[-1]
        if key not in _CONCURRENT:
            # A stage reporting means the stages before it are over (one with nothing to do never reports).
            for earlier in stages[: stages.index(key)]:
                self._done[earlier] = 1.0
        self._done[key] = max(self._done.get(key, 0.0), done / total if total else 1.0)
        overall = 100.0 * sum(self._done.values()) / len(stages)
        if overall - self._last < 1.0 and done < total:
            return
        self._last = overall
        anyio.from_thread.run(self._ctx.report_progress, round(overall, 1), 100.0, f"{stage} {done}/{total}")
