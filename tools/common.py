"""What every tool shares: the state the server's lifespan builds, the typed parameters, and the
one way engine calls are made (off the event loop, domain errors turned into tool errors)."""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar
from urllib.parse import urlparse

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, WithJsonSchema

from cuerag import CueRagError, Engine, Settings
from cuerag.config import MAX_QUERY_CHARS
from cuerag.retrieval.filters import DocFilter
from tools.jobs import Jobs

T = TypeVar("T")


@dataclass
class AppState:
    """Built once by the server's lifespan and handed to every tool call."""

    engine: Engine  # this process's CueRag, or the one serving the data directory (cuerag.engine.sharing)
    jobs: Jobs
    allowed_roots: list[Path] = field(default_factory=list)
    corpus_descriptions: dict[str, str] = field(default_factory=dict)  # the operator's, by corpus name


def _never(_: Settings) -> bool:
    return False


@dataclass(frozen=True)
class ToolSpec:
    """A tool function with its MCP name, title, annotations and whether it writes."""

    fn: Callable[..., Any]
    name: str
    title: str
    annotations: ToolAnnotations
    write: bool = False  # left out of a read-only server
    needs_llm: bool = False
    llm_args: tuple[str, ...] = ()  # arguments listed only when the server has an LLM
    stepwise_args: tuple[str, ...] = ()  # arguments listed only with the step tools (--stepwise)
    # One step of Q-Iter by hand (link, search, expand, fetch units): listed only on a server started
    # with `--stepwise`. q_iter walks the same steps in one call, and the four schemas were 3 KB of
    # every `tools/list` (docs/mcp.md, the tools/list budget).
    stepwise: bool = False
    # Whether, under these settings, a call can hand text to the LLM: the server then marks the
    # tool open-world when that LLM is not on this machine (see `llm_is_remote`).
    calls_llm: Callable[[Settings], bool] = _never


def tool(
    name: str,
    title: str,
    annotations: ToolAnnotations,
    *,
    write: bool = False,
    needs_llm: bool = False,
    llm_args: tuple[str, ...] = (),
    stepwise_args: tuple[str, ...] = (),
    calls_llm: Callable[[Settings], bool] = _never,
    stepwise: bool = False,
) -> Callable[[Callable[..., Any]], ToolSpec]:
    def wrap(fn: Callable[..., Any]) -> ToolSpec:
        return ToolSpec(
            fn=fn,
            name=name,
            title=title,
            annotations=annotations,
            write=write,
            needs_llm=needs_llm,
            llm_args=llm_args,
            stepwise_args=stepwise_args,
            calls_llm=calls_llm,
            stepwise=stepwise,
        )

    return wrap


def always(_: Settings) -> bool:
    return True


def llm_is_remote(settings: Settings) -> bool:
    """Whether the configured LLM is reached over the network: the provider's own API (no base URL)
    or a host other than this machine. Text sent to it leaves the machine, which clients in
    plan or auto modes weigh through `openWorldHint`; a llama.cpp server on localhost does not."""
    if settings.llm_provider == "none":
        return False
    if not settings.llm_base_url:
        return True
    host = urlparse(settings.llm_base_url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return True


# The destructive and idempotent hints mean something only for tools that write (the spec's
# words), so a read-only tool states the two that do, and `tools/list` stays small.
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def state_of(ctx: Context[AppState]) -> AppState:
    state: AppState = ctx.request_context.lifespan_context
    return state


async def run_engine(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking engine call on a worker thread; domain errors become tool errors whose
    message tells the agent what to change."""
    try:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
    except CueRagError as exc:
        raise ToolError(str(exc)) from exc


# The engine checks a name in full (1-64 letters, digits, '-' or '_') and says so; the schema keeps
# only the bound that stops a long string before it reaches the engine. Every argument carries a
# description, however short: Claude Desktop and Cursor show the model the schema, never the
# server's instructions (tests/tools/test_mcp_schemas.py holds every tool to it).
Corpus = Annotated[str, Field(max_length=64, description="Corpus.")]
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="Question.")]
TopK = Annotated[int, Field(ge=1, le=50, description="How many.")]
UnitIds = Annotated[list[str], Field(max_length=200, description="Units to skip.")]
SubtractIds = Annotated[
    list[str],
    Field(max_length=50, description="Units to subtract."),
]


# The filter every retrieval tool takes. Its schema is written out here, compact, because it is
# repeated in each of those tools' schemas in `tools/list` (six times; a shared `$defs` entry is
# not an option: Gemini, GitHub Copilot CLI and several agent frameworks drop or cannot resolve
# `$ref`, see tests/tools/test_mcp_schemas.py): typed arrays (VS Code refuses an array without
# `items`) and a few words each, the semantics a model cannot guess (all conditions hold, tags
# match any). `path_prefix` is accepted but not listed: `path_glob` says the same ("teams/*", as
# `*` crosses `/`) and each listed property costs six times. `DocFilter` checks the values and its
# errors name them. No `"default": null`, which says nothing an optional property does not.
def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


_STRINGS = {"type": "array", "items": {"type": "string"}}
Filter = Annotated[
    DocFilter | None,
    WithJsonSchema(
        {
            "type": "object",
            "description": "Only documents matching all of:",
            "properties": {
                "doc_ids": {**_STRINGS, "description": "Ids."},
                "path_glob": {"type": "string", "description": "Path glob."},
                "tags": {**_STRINGS, "description": "Any tag."},
            },
        }
    ),
    Field(json_schema_extra=_no_default),
]
# A glob is matched in linear time, and one over 1,024 characters is refused (cuerag.ingest.globs).
Include = Annotated[list[str], Field(max_length=100, description="Globs to keep.")]
Exclude = Annotated[list[str], Field(max_length=100, description="Globs to skip.")]
