"""What every tool shares: the state the server's lifespan builds, the typed parameters, and the
one way engine calls are made (off the event loop, domain errors turned into tool errors)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, WithJsonSchema

from cuerag import CueRag, CueRagError
from cuerag.config import MAX_QUERY_CHARS
from cuerag.retrieval.filters import DocFilter
from tools.jobs import Jobs

T = TypeVar("T")


@dataclass
class AppState:
    """Built once by the server's lifespan and handed to every tool call."""

    engine: CueRag
    jobs: Jobs
    allowed_roots: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class ToolSpec:
    """A tool function with its MCP name, title, annotations and whether it writes."""

    fn: Callable[..., Any]
    name: str
    title: str
    annotations: ToolAnnotations
    write: bool = False
    needs_llm: bool = False
    llm_args: tuple[str, ...] = ()  # arguments listed only when the server has an LLM


def tool(
    name: str,
    title: str,
    annotations: ToolAnnotations,
    *,
    write: bool = False,
    needs_llm: bool = False,
    llm_args: tuple[str, ...] = (),
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
        )

    return wrap


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
Corpus = Annotated[str, Field(max_length=64, description="Corpus name.")]
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The question.")]
TopK = Annotated[int, Field(ge=1, le=50, description="How many.")]
UnitIds = Annotated[list[str], Field(max_length=200, description="Unit ids to skip.")]
SubtractIds = Annotated[
    list[str],
    Field(max_length=50, description="Unit ids to subtract."),
]


# The filter every retrieval tool takes. Its schema is written out here, compact, because it is
# repeated in each of those tools' schemas in `tools/list` (seven times): typed arrays (VS Code
# refuses an array without `items`) and a few words each, the semantics a model cannot guess
# (all conditions hold, tags match any); `DocFilter` checks the values and its errors name them.
# No `"default": null`, which says nothing an optional property does not.
def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


_STRINGS = {"type": "array", "items": {"type": "string"}}
Filter = Annotated[
    DocFilter | None,
    WithJsonSchema(
        {
            "type": "object",
            "description": "Documents matching all given.",
            "properties": {
                "doc_ids": {**_STRINGS, "description": "Ids."},
                "path_prefix": {"type": "string", "description": "Path prefix."},
                "path_glob": {"type": "string", "description": "fnmatch glob."},
                "tags": {**_STRINGS, "description": "Any of these tags."},
            },
        }
    ),
    Field(json_schema_extra=_no_default),
]
Include = Annotated[list[str], Field(max_length=100, description="Globs to keep.")]
Exclude = Annotated[list[str], Field(max_length=100, description="Globs to skip.")]
