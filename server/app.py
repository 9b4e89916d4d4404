"""Builds the MCP server: the lifespan that loads models and the store once, the tools from the
registry (write tools left out in read-only mode), the document resources with their completions,
the research prompt and the configuration resource. Capabilities are what is served: no list ever
changes while the server runs and no resource is watched, so none of the change notifications or
subscriptions is offered, and the fixed lists say clients may keep them (`ttlMs`)."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import Completion, CompletionArgument, CompletionContext, PromptReference, ResourceTemplateReference

from cuerag import Engine, Settings, open_engine
from cuerag.llm.redact import redact_values
from server.config import ServerSettings
from server.tool_adapter import make_tool
from tools import TOOLS, AppState, ToolSpec
from tools.common import llm_is_remote
from tools.jobs import JobLimits, Jobs
from tools.list_corpora import DESCRIBED_IN, corpus_note
from tools.prompts import DESCRIPTION as RESEARCH_DESCRIPTION
from tools.prompts import NAME as RESEARCH
from tools.prompts import SENSEMAKING, SENSEMAKING_DESCRIPTION, SENSEMAKING_TITLE, research, sensemaking
from tools.prompts import TITLE as RESEARCH_TITLE
from tools.resources import (
    DOCUMENT_TEMPLATE,
    THEME_TEMPLATE,
    complete_corpus,
    complete_doc_id,
    read_document_resource,
    read_theme_resource,
)

log = logging.getLogger(__name__)

# The tools, templates, prompts and static resources are fixed when the server is built.
_FIXED = CacheHint(ttl_ms=3_600_000)
_CACHE_HINTS = {m: _FIXED for m in ("tools/list", "resources/list", "resources/templates/list", "prompts/list")}

_INSTRUCTIONS = """\
Multi-hop retrieval over indexed corpora (CUE-RAG). list_corpora shows what can be searched.

For a question, call q_iter first: one call walks the graph (entity → statement → entity) and
returns the best passages, each with why it is there (its best path, a title the question names,
a title link from another passage, or the dense fill). Cite the passages by title and doc_id. Its
default detail="compact" is sized for a context window; ask detail="full" only to inspect every
kept path. dense_search is enough for a single-hop lookup.

{stepwise}Every retrieval tool takes `filter` to search part of a corpus: doc_ids, path_glob (fnmatch on
the source path, `*` also crosses `/`: "teams/*" for a folder) and tags (front matter; any of them);
a document must match all given.
For a broad question (its main topics, what the corpus says about X across many pages), call
global_search: statements grouped by theme, cited; themes browses the theme hierarchy (the
sensemaking prompt walks a map-reduce over it). A subject with a page of its own ("what does the
manual say about security?") is q_iter's: it ranks that page first; read_document reads it.
list_documents shows what a corpus holds. Hits link their document as a resource
(cuerag://{corpus}/documents/{doc_id}); read_document reads a window around a chunk.

index_corpus with background=true (or watch=true, to keep a folder in sync) returns a job at once:
job_status polls it or waits for it (wait_s); cancel_job stops it."""

# Said only by a server that lists the step-by-step tools (`--stepwise`).
_STEPWISE = """\
Walk step by step instead when q_iter's passages lack a hop (the reasons show which entity the
paths went through, and none reaches the missing fact), or when you must control each hop:
link_entities or search_units to start, expand_entity for the next hop (pass the statements
already on your path as `subtract`, so the search looks for what is still missing, and as
`exclude`), then get_chunks for the full passages.

"""


def instructions(server_settings: ServerSettings) -> str:
    """The server's instructions, naming only the tools it lists."""
    return _INSTRUCTIONS.replace("{stepwise}", _STEPWISE if server_settings.stepwise else "")


@dataclass
class _Holder:
    """The running server's state, for the resource (which cannot take a request context)."""

    state: AppState | None = None


def _unlisted_because(spec: ToolSpec, engine_settings: Settings, server_settings: ServerSettings) -> str | None:
    """Why this server leaves the tool out, or None when it is listed."""
    if spec.write and server_settings.read_only:
        return "this server was started read-only (--read-only), which leaves out the tools that write"
    if spec.stepwise and not server_settings.stepwise:
        return (
            "the step-by-step tools are listed only on a server started with --stepwise "
            "(CUERAG_MCP_STEPWISE=true); q_iter walks the same steps in one call"
        )
    if spec.needs_llm and engine_settings.llm_provider == "none":
        return "no LLM is configured (set CUERAG_LLM_PROVIDER and its model)"
    return None


def _listed(spec: ToolSpec, engine_settings: Settings, server_settings: ServerSettings) -> bool:
    return _unlisted_because(spec, engine_settings, server_settings) is None


class _CueServer(MCPServer[AppState]):
    """The SDK's server, saying why a tool it leaves out is not there: a client that calls
    index_corpus on a read-only server gets that reason, not "Unknown tool"."""

    def __init__(self, *args: Any, unlisted: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._unlisted = unlisted

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if name in self._unlisted:
            raise ToolError(f"{name} is not available here: {self._unlisted[name]}")
        return await super().call_tool(name, arguments, context)


def build_server(
    engine_settings: Settings,
    server_settings: ServerSettings,
    *,
    engine_factory: Callable[[Settings], Engine] | None = None,
) -> MCPServer[AppState]:
    holder = _Holder()
    if server_settings.read_only:
        # Hiding the write tools is not enough to serve a read-only directory: the store must
        # open without creating or writing anything.
        engine_settings = engine_settings.model_copy(update={"read_only": True})

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppState]) -> AsyncIterator[AppState]:
        # A second server on the same data directory (another client's), or one started while the
        # CLI indexes, uses the index through the process that holds it, and takes over when that
        # one ends (cuerag.engine.sharing).
        factory = engine_factory or functools.partial(open_engine, standby=True)
        engine = await anyio.to_thread.run_sync(factory, engine_settings)
        try:
            # Background jobs run in this task group: they outlive the calls that start them and
            # end with the server, each stopped at its next step before the engine closes.
            async with anyio.create_task_group() as task_group:
                jobs = Jobs(task_group, JobLimits(server_settings.max_jobs, server_settings.kept_jobs))
                holder.state = AppState(
                    engine=engine,
                    jobs=jobs,
                    allowed_roots=list(server_settings.allowed_roots),
                    corpus_descriptions=dict(server_settings.corpus_descriptions),
                )
                log.info("engine ready: corpora %s", engine.corpora())
                try:
                    yield holder.state
                finally:
                    holder.state = None
                    jobs.stop_all()
        finally:
            engine.close()

    server: MCPServer[AppState] = _CueServer(
        "cuerag",
        unlisted={
            spec.name: why
            for spec in TOOLS
            if (why := _unlisted_because(spec, engine_settings, server_settings)) is not None
        },
        instructions=instructions(server_settings),
        version="0.1.0",
        lifespan=lifespan,
        subscriptions=False,  # nothing is ever notified: `subscriptions/listen` would wait in vain
        cache_hints=_CACHE_HINTS,
        log_level="WARNING",
        tools=[
            make_tool(
                spec,
                llm=engine_settings.llm_provider != "none",
                stepwise=server_settings.stepwise,
                open_world=llm_is_remote(engine_settings) and spec.calls_llm(engine_settings),
                note=corpus_note(server_settings.corpus_descriptions) if spec.name in DESCRIBED_IN else "",
            )
            for spec in TOOLS
            if _listed(spec, engine_settings, server_settings)
        ],
    )

    server.resource(
        DOCUMENT_TEMPLATE,
        name="document",
        title="Document",
        description="A document's extracted text, as read_document gives it (first 100,000 characters).",
        mime_type="text/plain",
    )(read_document_resource)

    server.resource(
        THEME_TEMPLATE,
        name="theme",
        title="Theme",
        description="A theme of a corpus opened, as the themes tool gives it (JSON); theme_id 'top' lists level 0.",
        mime_type="application/json",
    )(read_theme_resource)

    server.prompt(name=RESEARCH, title=RESEARCH_TITLE, description=RESEARCH_DESCRIPTION)(research)
    server.prompt(name=SENSEMAKING, title=SENSEMAKING_TITLE, description=SENSEMAKING_DESCRIPTION)(sensemaking)

    @server.completion()
    async def complete(
        ref: ResourceTemplateReference | PromptReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion | None:
        """The document template's `{corpus}` and `{doc_id}`, and the research prompt's `corpus`;
        `doc_id` within the corpus already chosen."""
        engine = holder.state.engine if holder.state else None
        document = isinstance(ref, ResourceTemplateReference) and ref.uri == DOCUMENT_TEMPLATE
        prompt = isinstance(ref, PromptReference) and ref.name in (RESEARCH, SENSEMAKING)
        if engine is None or not (document or prompt):
            return None
        if argument.name == "corpus":
            return await anyio.to_thread.run_sync(complete_corpus, engine, argument.value)
        corpus = (context.arguments or {}).get("corpus") if context else None
        if document and argument.name == "doc_id" and corpus:
            return await anyio.to_thread.run_sync(complete_doc_id, engine, corpus, argument.value)
        return None

    @server.resource("config://server", mime_type="application/json")
    def server_config() -> str:
        """The server's configuration (secrets redacted) and its corpora with their sizes."""
        engine = holder.state.engine if holder.state else None
        corpora = [engine.info(c).model_dump() for c in engine.corpora()] if engine else []
        # SecretStr fields dump as "**********"; URLs carry their own secrets (user-info, api-key
        # parameters), so every string goes through the URL redaction too.
        return json.dumps(
            {
                "engine": redact_values(json.loads(engine_settings.model_dump_json())),
                "server": redact_values(json.loads(server_settings.model_dump_json())),
                "tools": [s.name for s in TOOLS if _listed(s, engine_settings, server_settings)],
                "corpora": corpora,
            },
            default=str,
        )

    return server
