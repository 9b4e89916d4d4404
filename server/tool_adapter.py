"""How a tool from the registry becomes an MCP tool: unknown arguments refused, argument errors in
one readable line, a readable text content beside the structured one, and a lean `tools/list`.

No tool publishes an output schema. The schemas were two fifths of `tools/list` (read by every
client on every connection, and by some into the model's context), no client shows them to the
model, the retrieval tools' shape depends on `detail`, and the Python client spent about 5 ms per
call validating results against them. The structured content is sent all the same; its models are
in `tools/rendering.py` and the engine."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, ValidationError

from server.arguments import invalid_arguments
from tools import ToolSpec
from tools.rendering import render_text
from tools.resources import document_links


def _without_titles(schema: Any) -> Any:
    """The schema without pydantic's generated `title`s ("Corpus" for `corpus`): they repeat the
    property names and make up a fifth of `tools/list`."""
    if isinstance(schema, dict):
        # A property named "title" maps to a dict, and stays.
        return {k: _without_titles(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_without_titles(v) for v in schema]
    return schema


class CueTool(Tool):
    @cached_property
    def output_schema(self) -> dict[str, Any] | None:
        return None

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            result = await super().run(arguments, context, convert_result=False)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                # The cause stays a ValidationError: the SDK logs the field names from it.
                raise ToolError(invalid_arguments(self.name, exc.__cause__, self.parameters)) from exc.__cause__
            raise
        if not convert_result:
            return result
        if isinstance(result, BaseModel):
            # Resource links let a client open each hit's document (see tools/resources.py).
            return CallToolResult(
                content=[TextContent(type="text", text=render_text(result)), *document_links(result)],
                structured_content=result.model_dump(mode="json", by_alias=True),
            )
        return self.fn_metadata.convert_result(result)


def make_tool(spec: ToolSpec) -> CueTool:
    """The MCP tool for a registry entry. Unknown argument names are refused: the SDK drops them
    silently, so a misspelt `topn=2` would run with the default and the agent never learn why.
    Types are checked strictly, for every parameter: the schema says integer, so `"3"`, `true` and
    `3.0` are refused rather than read as 3, and a boolean takes only true/false, not `"no"` (which
    lax parsing reads as false, but `"nope"` as an error): what the schema shows is what is
    accepted, as with other servers' schemas. A float takes an integer (JSON has one number type),
    and lists and objects sent as JSON text are still parsed by the SDK first."""
    description = " ".join((spec.fn.__doc__ or "").split())  # the docstring without its indentation
    base = Tool.from_function(
        spec.fn, name=spec.name, title=spec.title, description=description, annotations=spec.annotations
    )
    loose = base.fn_metadata.arg_model
    base.fn_metadata.arg_model = type(
        loose.__name__, (loose,), {"model_config": ConfigDict(extra="forbid", strict=True)}
    )
    # Unknown arguments are refused by the argument model with a message naming the right ones;
    # `additionalProperties: false` in every schema would say it again in `tools/list`.
    parameters = _without_titles(base.parameters)
    fields = {name: getattr(base, name) for name in Tool.model_fields if name != "parameters"}
    return CueTool(**fields, parameters=parameters)
