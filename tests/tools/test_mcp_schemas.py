"""Every tool's input schema as the strictest clients check it, listed through the SDK's client.

VS Code Copilot refuses a tool whose array has no `items` ("tool parameters array type must have
items"); Gemini (Gemini CLI, and clients that forward to it) cannot resolve `$defs`/`$ref` and
rejects keywords outside its subset (`additionalProperties`, `anyOf` beside others, type lists);
OpenAI-style strict validation accepts a subset of JSON Schema too. Clients that see only the
schema (Claude Desktop and Cursor never show the server's instructions) need a description on every
argument, nested ones included. The check runs over whatever `tools/list` holds, so a tool added
later is checked as well. The server runs with an LLM configured and the write tools on: the
largest listing. No engine is needed to list tools, so none is built (no models loaded).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.types import Tool

from cuerag import Settings
from server.app import build_server, instructions
from server.config import ServerSettings

pytestmark = pytest.mark.anyio

# The keywords all of those clients accept. Range and enum constraints are kept (they tell the
# model the choices); `default` is accepted by each (Gemini's schema has it, strict OpenAI ignores it).
ALLOWED = frozenset({"type", "description", "properties", "required", "items", "enum", "minimum", "maximum", "default"})
TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object"})


class _NoEngine:
    """What the lifespan asks of an engine while the tools are only listed."""

    def corpora(self) -> list[str]:
        return []

    def close(self) -> None:
        pass


async def listed_tools(tmp_path: Path, *, stepwise: bool = True, **engine: Any) -> list[Tool]:
    server = build_server(
        Settings(data_dir=tmp_path, **engine),
        ServerSettings(allowed_roots=[tmp_path], stepwise=stepwise),
        engine_factory=lambda _: _NoEngine(),  # type: ignore[arg-type,return-value]
    )
    async with Client(server) as client:
        return (await client.list_tools()).tools


def _nodes(schema: dict[str, Any], where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema with its path: properties' and items' schemas, at any depth."""
    yield where, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _nodes(sub, f"{where}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"], f"{where}[]")
    for name, sub in schema.get("$defs", {}).items():
        yield from _nodes(sub, f"{where}.$defs.{name}")


def violations(tool: Tool) -> list[str]:
    """What a strict client would refuse in a tool's input schema, one line each."""
    schema = tool.input_schema
    found: list[str] = []
    try:
        Draft202012Validator.check_schema(schema)
    except Exception as exc:  # the library's SchemaError, worded
        found.append(f"{tool.name}: not valid JSON Schema 2020-12: {exc}")
    if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
        found.append(f"{tool.name}: the input schema is not an object with properties")
    for where, node in _nodes(schema, tool.name):
        extra = sorted(set(node) - ALLOWED)
        if extra:
            found.append(f"{where}: keywords a strict client refuses: {extra}")
        if node.get("type") not in TYPES:
            found.append(f"{where}: no single type ({node.get('type')!r})")
        if node.get("type") == "array" and not isinstance(node.get("items"), dict):
            found.append(f"{where}: an array without items")
        if "enum" in node and node.get("type") != "string":
            found.append(f"{where}: an enum that is not of strings")
        if where != tool.name and not node.get("description") and not where.endswith("[]"):
            found.append(f"{where}: no description")
        missing = set(node.get("required", [])) - set(node.get("properties", {}))
        if missing:
            found.append(f"{where}: required but not a property: {sorted(missing)}")
    return found


@pytest.mark.parametrize("llm", [True, False], ids=["with-llm", "no-llm"])
async def test_every_tool_schema_passes_the_strictest_clients(tmp_path: Path, llm: bool) -> None:
    engine = {"llm_provider": "openai", "llm_model": "m"} if llm else {}
    tools = await listed_tools(tmp_path, **engine)
    assert len(tools) >= 13
    found = [v for tool in tools for v in violations(tool)]
    assert found == [], f"{len(found)} violations:\n" + "\n".join(found)


async def test_every_tool_says_what_it_does(tmp_path: Path) -> None:
    for tool in await listed_tools(tmp_path, llm_provider="openai", llm_model="m"):
        assert tool.title, tool.name
        assert tool.description and len(tool.description) >= 20, tool.name


async def test_the_default_listing_keeps_to_the_budget_and_says_why_a_step_tool_is_not_there(tmp_path: Path) -> None:
    """Issue 31: `tools/list` within 8 KB. The step-by-step tools are listed on request only; called
    anyway, one says how to list it and what does the same in one call."""
    server = build_server(
        Settings(data_dir=tmp_path),
        ServerSettings(allowed_roots=[tmp_path]),
        engine_factory=lambda _: _NoEngine(),  # type: ignore[arg-type,return-value]
    )
    async with Client(server) as client:
        listed = await client.list_tools()
        names = {t.name for t in listed.tools}
        assert {"q_iter", "read_document", "list_corpora", "index_corpus"} <= names
        assert not names & {"link_entities", "search_units", "expand_entity", "get_units"}
        assert len(listed.model_dump_json(by_alias=True, exclude_none=True).encode()) <= 8_192
        refused = await client.call_tool("expand_entity", {"corpus": "c", "entity": "e", "query": "q"})
        assert refused.is_error and "--stepwise" in refused.content[0].text  # type: ignore[union-attr]
    every = await listed_tools(tmp_path, llm_provider="openai", llm_model="m")
    # Every tool, step tools and `answer` (an LLM configured) too: kept from growing unnoticed
    # (12,450 bytes summed over the tools today: themes and global_search added 1.1 KB).
    assert len(every) == 17
    assert sum(len(t.model_dump_json(by_alias=True, exclude_none=True).encode()) for t in every) <= 12_600


def test_the_checker_finds_what_clients_refuse() -> None:
    """The rules themselves, on a schema that breaks each once."""
    bad = Tool(
        name="bad",
        input_schema={
            "type": "object",
            "$defs": {"D": {"type": "object"}},
            "properties": {
                "ids": {"type": "array", "description": "No items."},
                "bare": {"type": "string"},
                "either": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "Two types."},
                "doc": {"$ref": "#/$defs/D", "description": "A reference."},
            },
        },
    )
    found = "\n".join(violations(bad))
    for expected in ("an array without items", "bad.bare: no description", "['anyOf']", "['$ref']", "['$defs']"):
        assert expected in found, found


async def test_a_subject_with_a_page_of_its_own_is_sent_to_q_iter(tmp_path: Path) -> None:
    """A question like "what does the manual say about security?" is broad in form, but on Flask's
    documentation q_iter ranked the subject's own page first for 12 of 12 such questions while
    global_search took 1-4 of its 11-28 statements from it: the instructions and global_search's
    description (which Claude Desktop and Cursor show without the instructions) both say so."""
    said = " ".join(instructions(ServerSettings(allowed_roots=[tmp_path])).split())
    assert "A subject with a page of its own" in said and "is q_iter's" in said
    described = {t.name: t.description or "" for t in await listed_tools(tmp_path)}
    assert "q_iter" in described["global_search"] and "own page" in described["global_search"]
