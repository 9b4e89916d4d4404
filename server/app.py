"""Builds the MCP server: the lifespan that loads models and the store once, the tools from the
registry (write tools left out in read-only mode) and the configuration resource."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from pydantic import ConfigDict

from cuerag import CueRag, Settings
from cuerag.redact import redact_values
from server.config import ServerSettings
from tools import TOOLS, AppState, ToolSpec

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
Multi-hop retrieval over indexed corpora (CUE-RAG). Start with list_corpora. For a question, call
q_iter: it returns the best chunks and a trace of the entity → unit → entity paths that found them.
To reason step by step instead: link_entities (query entities → entity nodes), search_units
(statements near the query), expand_entity (an entity's statements, ranked; pass units already on
your path as `subtract` so the next hop looks for what is missing), then get_chunks for full text."""


@dataclass
class _Holder:
    """The running server's state, for the resource (which cannot take a request context)."""

    state: AppState | None = None


def strict_tool(spec: ToolSpec) -> Tool:
    """The tool with unknown argument names refused and argument types checked strictly. The SDK
    drops unknown names silently, so a misspelt `topn=2` would run with the default and the agent
    would never learn why. Strict types, for every parameter: the schema says integer, so `"3"`,
    `true` and `3.0` are refused rather than read as 3, and a boolean takes only true/false, not
    `"no"` (which lax parsing reads as false, but `"nope"` as an error): what the schema shows is
    what is accepted, as with other servers' schemas. A float takes an integer (JSON has one
    number type), and lists and objects sent as JSON text are still parsed by the SDK first."""
    tool = Tool.from_function(spec.fn, name=spec.name, annotations=spec.annotations)
    loose = tool.fn_metadata.arg_model
    tool.fn_metadata.arg_model = type(
        loose.__name__, (loose,), {"model_config": ConfigDict(extra="forbid", strict=True)}
    )
    tool.parameters["additionalProperties"] = False
    return tool


def _listed(spec: ToolSpec, engine_settings: Settings, server_settings: ServerSettings) -> bool:
    if spec.write and server_settings.read_only:
        return False
    return not (spec.needs_llm and engine_settings.llm_provider == "none")


def build_server(
    engine_settings: Settings,
    server_settings: ServerSettings,
    *,
    engine_factory: Callable[[Settings], CueRag] = CueRag,
) -> MCPServer[AppState]:
    holder = _Holder()
    if server_settings.read_only:
        # Hiding the write tools is not enough to serve a read-only directory: the store must
        # open without creating or writing anything.
        engine_settings = engine_settings.model_copy(update={"read_only": True})

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppState]) -> AsyncIterator[AppState]:
        engine = await anyio.to_thread.run_sync(engine_factory, engine_settings)
        holder.state = AppState(engine=engine, allowed_roots=list(server_settings.allowed_roots))
        log.info("engine ready: corpora %s", engine.corpora())
        try:
            yield holder.state
        finally:
            holder.state = None
            engine.close()

    server: MCPServer[AppState] = MCPServer(
        "cuerag",
        instructions=INSTRUCTIONS,
        version="0.1.0",
        lifespan=lifespan,
        log_level="WARNING",
        tools=[strict_tool(spec) for spec in TOOLS if _listed(spec, engine_settings, server_settings)],
    )

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
