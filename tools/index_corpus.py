"""`index_corpus`: add files or inline documents to a corpus, with progress notifications."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Annotated

import anyio
import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from cuerag import CueRagError, Engine, IndexReport, InputError, WalkRules, make_document
from cuerag.engine.watch import watch_folder
from cuerag.graph.schema import validate_corpus_name
from tools.common import AppState, Corpus, Exclude, Include, state_of, tool
from tools.jobs import Job, JobHandle, JobInfo, Stages, wait_for
from tools.paths import ToolPath, bounded_path

log = logging.getLogger(__name__)

# Indexing stages in the order the engine runs them; progress is reported over all of them.
# In the order the engine finishes them; NER runs beside "embed units" and "embed chunks".
# "embed chunk parts": CUERAG_CHUNK_VECTORS=derived (cuerag.index.chunk_vectors); an embedded index never reports it.
_STAGES = Stages(
    ("split", "embed units", "embed chunk parts", "embed chunks", "ner", "embed entities", "store"), frozenset({"ner"})
)
# At α > 0 the LLM works between split and the rest.
_LLM_STAGES = Stages(("split", "extract", *_STAGES.order[1:]), _STAGES.concurrent)
# A desktop host starts the server in a folder of its choosing (often `/` or the home folder), so
# a relative path is read from the first allowed root, the folder the user chose, not from there.
_PATHS = "Files or folders; a relative path is read from the first allowed root."


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
    id: str | None = Field(default=None, max_length=256, description="Default: a hash.")


def check_allowed(path: str, roots: list[Path], *, walked: bool = False) -> Path:
    """Resolve a path (symlinks included; a relative one from the first root) and refuse it unless
    it lies under an allowed root. `walked`: a file found in a folder the caller named, not a path
    the caller gave (its advice differs: the caller cannot give another path for a link a folder
    holds)."""
    if "\x00" in path:  # resolve() would raise a bare ValueError: a crash, not a refusal
        raise InputError(f"path {path!r} holds a NUL character")
    bounded_path(path)
    try:
        given = Path(path).expanduser()
        resolved = (given if given.is_absolute() or not roots else roots[0] / given).resolve()
    except OSError as exc:  # ENAMETOOLONG, ELOOP (strict=False still raises on a loop on 3.11)
        raise InputError(f"path {path[:80]!r} cannot be resolved: {exc.strerror or exc}") from None
    except RuntimeError:  # expanduser: `~name` of no user (or no home): a refusal, not a crash
        raise InputError(f"path {path[:80]!r} names the home folder of no user of this machine") from None
    for root in roots:
        if resolved.is_relative_to(root.resolve()):
            return resolved
    # The advice is what the agent can do; the roots themselves are the operator's choice.
    if not roots:
        raise InputError(
            f"path {path!r} is outside the allowed roots (this server reads no files): send its text as `documents`"
        )
    listed = ", ".join(str(r) for r in roots)
    if walked:  # inside an allowed folder, so a link that leads out of it
        raise InputError(
            f"path {path!r} is outside the allowed roots, the folders this server may read ({listed}): the link "
            "is skipped, not followed; copy the file it leads to into the folder, or send its text as `documents`"
        )
    raise InputError(
        f"path {path!r} is outside the allowed roots, the folders this server may read ({listed}): "
        "give a path under one of them, or send the text as `documents`"
    )


@tool(
    "index_corpus",
    "Index documents",
    ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
    write=True,
    calls_llm=lambda s: s.alpha > 0,  # hybrid extraction sends chunks to the LLM
)
async def index_corpus(
    corpus: Corpus,
    ctx: Context[AppState],
    paths: Annotated[list[ToolPath], Field(max_length=1000, description=_PATHS)] = [],  # noqa: B006
    documents: Annotated[list[DocumentInput], Field(max_length=10_000, description="Texts to index.")] = [],  # noqa: B006
    # Documents indexed inline or from other folders are never touched by a sync. Unset, an index
    # run keeps the documents of deleted files and a watch drops them (it keeps the folder in sync).
    sync: Annotated[
        bool | None,
        WithJsonSchema({"type": "boolean"}),
        Field(description="Drop documents of deleted files (unset: a watch does)."),
    ] = None,
    strict: Annotated[bool, Field(description="Write nothing if a file fails.")] = False,
    include: Include = [],  # noqa: B006
    exclude: Exclude = [],  # noqa: B006
    background: Annotated[bool, Field(description="Return a job at once.")] = False,
    watch: Annotated[bool, Field(description="Keep one folder in sync (a job).")] = False,
    # Unset, a report lists the first 100 files of each kind, unchanged ones not at all, with every
    # count (cuerag.index.report_bounds).
    full_report: Annotated[bool, Field(description="List every file.")] = False,
) -> IndexReport | JobInfo:
    """Makes files, folders or texts searchable; unchanged files are skipped."""
    state = state_of(ctx)
    if not paths and not documents:
        raise ToolError("nothing to index: give `paths` or `documents`")
    if paths and not state.allowed_roots:
        raise ToolError(PATHS_OFF)
    validate(corpus)
    # Resolving runs on a worker thread: the event loop answers other clients meanwhile.
    checked = await anyio.to_thread.run_sync(lambda: [check_or_refuse(p, state.allowed_roots) for p in paths])
    rules = WalkRules(include=tuple(include), exclude=tuple(exclude))

    def check(f: Path) -> Path:
        # Every file found under a folder is checked too: a symlink inside an allowed folder may
        # point anywhere, and checking the folder alone would read what it points to.
        return check_allowed(str(f), state.allowed_roots, walked=True)

    if watch:
        if documents or len(checked) != 1 or not checked[0].is_dir():
            raise ToolError("watch=true keeps one folder in sync: give one folder in `paths` and no `documents`")
        folder = checked[0]

        def run_watch(job: JobHandle) -> None:
            watch_folder(
                state.engine,
                corpus,
                folder,
                rules=rules,
                on_report=job.synced,
                on_error=job.sync_failed,
                stop=job.stop_event,
                check=check,
                progress=job.progress,
                sync=sync is not False,
            )

        return state.jobs.start("watch", corpus, run_watch, index_stages(state.engine)).info()

    def run(job: JobHandle) -> IndexReport:
        inline = [make_document(d.title, d.text, d.id) for d in documents]
        if not checked:
            return state.engine.index_documents(corpus, inline, progress=job.progress, should_stop=job.should_stop)
        return state.engine.index_paths(
            corpus,
            checked,
            documents=inline,
            sync=bool(sync),
            strict=strict,
            rules=rules,
            check=check,
            progress=job.progress,
            should_stop=job.should_stop,
            full_report=full_report,
        )

    job = state.jobs.start("index", corpus, run, index_stages(state.engine))
    if background:
        return job.info()
    return await finish_in_call(job, ctx)


def index_stages(engine: Engine) -> Stages:
    return _LLM_STAGES if engine.settings.alpha > 0 else _STAGES


def validate(corpus: str) -> None:
    """The corpus name, checked before a job starts: a typo is an error of the call, not a job."""
    try:
        validate_corpus_name(corpus)
    except CueRagError as exc:
        raise ToolError(str(exc)) from exc


def check_or_refuse(path: str, roots: list[Path]) -> Path:
    try:
        return check_allowed(path, roots)
    except CueRagError as exc:
        raise ToolError(str(exc)) from exc


async def finish_in_call(job: Job, ctx: Context[AppState]) -> IndexReport:
    """Wait for the job within this call, its progress sent as this call's notifications. A
    cancelled call (the client's `notifications/cancelled`, or the client gone) stops the job at
    its next step."""
    try:
        await wait_for(job, math.inf, ctx.report_progress)
    except anyio.get_cancelled_exc_class():
        job.stop.set()
        log.warning("index_corpus cancelled by the client; job %s stops at its next step", job.id)
        raise
    if isinstance(job.failure, CueRagError):
        raise ToolError(str(job.failure)) from job.failure
    if job.failure is not None:
        raise job.failure  # a bug: reported as the SDK reports any crash, as before jobs

    if job.result is None:  # cancelled by job_status while this call waited
        raise ToolError(f"job {job.id} was cancelled; the corpus is as before it, and a rerun completes it")
    return job.result
