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
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from server.arguments import invalid_arguments
from tools import ToolSpec
from tools.rendering import render_text
from tools.resources import document_links

# Bounds that guard the server (a 4,000-character query, 200 ids, a 64-character name, no unknown
# keys) rather than describe a choice: the argument model enforces them and an argument past one is
# refused with the bound named (see server/arguments.py), so `tools/list` need not repeat them on
# every connection. Numeric ranges (k from 1 to 50) are choices, and stay.
_GUARDS = frozenset({"maxLength", "minLength", "maxItems", "minItems", "additionalProperties"})


def _without_titles(schema: Any) -> Any:
    """The schema without pydantic's generated `title`s ("Corpus" for `corpus`): they repeat the
    property names and make up a fifth of `tools/list`."""
    if isinstance(schema, dict):
        # A property named "title" maps to a dict, and stays.
        return {k: _without_titles(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_without_titles(v) for v in schema]
    return schema


# Defaults that say what leaving the argument out says: no items, no text, off.
_EMPTY: tuple[Any, ...] = ([], "", None, False)


def _published(schema: Any) -> Any:
    """The schema as listed: without the size guards and the empty defaults, and an optional value
    (`X | None`) as X alone: leaving it out is how to give none."""
    if isinstance(schema, dict):
        options = schema.get("anyOf")
        if isinstance(options, list) and {"type": "null"} in options and len(options) == 2:
            (kept,) = (o for o in options if o != {"type": "null"})
            rest = {k: v for k, v in schema.items() if k != "anyOf"}
            return _published({**kept, **rest})
        return {
            k: _published(v)
            for k, v in schema.items()
            if k not in _GUARDS or isinstance(v, dict)
            if not (k == "default" and any(v is e or (v == e and type(v) is type(e)) for e in _EMPTY))
        }
    if isinstance(schema, list):
        return [_published(v) for v in schema]
    return schema


def _inlined(schema: Any, defs: dict[str, Any]) -> Any:
    """The schema with each local `$ref` replaced by its definition, and no `$defs`: Gemini (and
    clients that forward to it) cannot resolve references, so a `documents` item typed by
    reference reached the model as no type at all. The tools' models are not recursive."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.removeprefix("#/$defs/") in defs:
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            return _inlined({**defs[ref.removeprefix("#/$defs/")], **rest}, defs)
        return {k: _inlined(v, defs) for k, v in schema.items() if k != "$defs"}
    if isinstance(schema, list):
        return [_inlined(v, defs) for v in schema]
    return schema


class CueTool(Tool):
    # The whole argument schema, size guards included: what errors are explained against.
    checked_schema: dict[str, Any] = Field(default_factory=dict, exclude=True)

    @cached_property
    def output_schema(self) -> dict[str, Any] | None:
        return None

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            result = await super().run(arguments, context, convert_result=False)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                # The cause stays a ValidationError: the SDK logs the field names from it.
                raise ToolError(invalid_arguments(self.name, exc.__cause__, self.checked_schema)) from exc.__cause__
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


def make_tool(
    spec: ToolSpec, *, llm: bool = False, stepwise: bool = False, open_world: bool = False, note: str = ""
) -> CueTool:
    """The MCP tool for a registry entry. Unknown argument names are refused: the SDK drops them
    silently, so a misspelt `topn=2` would run with the default and the agent never learn why.
    Types are checked strictly, for every parameter: the schema says integer, so `"3"`, `true` and
    `3.0` are refused rather than read as 3, and a boolean takes only true/false, not `"no"` (which
    lax parsing reads as false, but `"nope"` as an error): what the schema shows is what is
    accepted, as with other servers' schemas. A float takes an integer (JSON has one number type),
    and lists and objects sent as JSON text are still parsed by the SDK first. `open_world`: a call
    can send text to an LLM off this machine, which the annotations then say. `note`: a sentence
    added to the description (the operator's word on the corpora)."""
    description = " ".join([*(spec.fn.__doc__ or "").split(), *note.split()])  # without the indentation
    annotations = spec.annotations.model_copy(update={"open_world_hint": True}) if open_world else spec.annotations
    base = Tool.from_function(
        spec.fn, name=spec.name, title=spec.title, description=description, annotations=annotations
    )
    loose = base.fn_metadata.arg_model
    base.fn_metadata.arg_model = type(
        loose.__name__, (loose,), {"model_config": ConfigDict(extra="forbid", strict=True)}
    )
    # Unknown arguments are refused by the argument model with a message naming the right ones;
    # `additionalProperties: false` in every schema would say it again in `tools/list`.
    checked = _without_titles(base.parameters)
    published = _published(_inlined(checked, checked.get("$defs", {})))
    if not llm:
        # An argument the server cannot honour is not offered; sent anyway, the tool says why not.
        for name in spec.llm_args:
            published["properties"].pop(name, None)
    if not stepwise:
        # A knob for an agent that walks step by step (to compare its walk with Q-Iter's): accepted
        # everywhere, listed only beside the step tools, since every client reads `tools/list`.
        for name in spec.stepwise_args:
            published["properties"].pop(name, None)
    fields = {name: getattr(base, name) for name in Tool.model_fields if name != "parameters"}
    return CueTool(**fields, parameters=published, checked_schema=checked)
