"""Argument errors an agent can act on: pydantic's validation errors for a tool call rewritten as
one line that names each argument, what was wrong with it and what to give instead (the type and
the allowed range, read from the tool's own input schema), with no link to pydantic's site."""

from __future__ import annotations

import json
import reprlib
from typing import Any

from pydantic import ValidationError

_GOT_CHARS = 60  # a long rejected value is cut: the agent knows what it sent


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        resolved: dict[str, Any] = root.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {})
        return resolved
    return schema


def _at(root: dict[str, Any], loc: tuple[int | str, ...]) -> dict[str, Any]:
    """The sub-schema at an error's location (properties by name, array items by index)."""
    schema = root
    for part in loc:
        schema = _resolve(schema, root)
        schema = schema.get("items", {}) if isinstance(part, int) else schema.get("properties", {}).get(part, {})
    return _resolve(schema, root)


def expected(schema: dict[str, Any], root: dict[str, Any]) -> str:
    """What a schema accepts, in words: 'an integer from 1 to 50', 'a list of strings'."""
    schema = _resolve(schema, root)
    if "anyOf" in schema:
        return " or ".join(expected(s, root) for s in schema["anyOf"] if s.get("type") != "null")
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    kind = schema.get("type")
    if kind in ("integer", "number"):
        low, high = schema.get("minimum"), schema.get("maximum")
        text = "an integer" if kind == "integer" else "a number"
        if low is not None and high is not None:
            return f"{text} from {low} to {high}"
        if low is not None:
            return f"{text} of at least {low}"
        return f"{text} of at most {high}" if high is not None else text
    if kind == "string":
        low, high = schema.get("minLength"), schema.get("maxLength")
        if low and high:
            return f"a string of {low} to {high} characters"
        return f"a string of at most {high} characters" if high else "a string"
    if kind == "boolean":
        return "true or false"
    if kind == "array":
        items = _resolve(schema.get("items", {}), root)
        of = "strings" if items.get("type") == "string" else f"items, each {expected(items, root)}"
        bounds = []
        if schema.get("minItems"):
            bounds.append(f"at least {schema['minItems']}")
        if schema.get("maxItems"):
            bounds.append(f"at most {schema['maxItems']}")
        return f"a list of {of}" + (f" ({', '.join(bounds)})" if bounds else "")
    if kind == "object" or "properties" in schema:
        fields = list(schema.get("properties", {}))
        required = set(schema.get("required", []))
        named = ", ".join(f"{f} (required)" if f in required else f for f in fields)
        return f"an object with {named}" if fields else "an object"
    return "a valid value"


def _shown(value: Any) -> str:
    if isinstance(value, str):
        value = value[: _GOT_CHARS + 1]
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (RecursionError, ValueError):  # JSON nested thousands deep, or a circular value
        text = reprlib.repr(value)
    return text if len(text) <= _GOT_CHARS else text[: _GOT_CHARS - 1] + "…"


def describe_error(error: Any, root: dict[str, Any]) -> str:
    """One validation error as '`argument`=value should be ...; give what the schema accepts'."""
    loc: tuple[int | str, ...] = tuple(error["loc"])
    where = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(loc))
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = ", ".join(_at(root, loc[:-1]).get("properties", {}))
        return f"unknown argument `{where}`; " + (
            f"the arguments are: {allowed}" if allowed else "it takes no arguments"
        )
    schema = _at(root, loc)
    if kind == "missing":
        return f"`{where}` is missing; give {expected(schema, root)}"
    got = error.get("input")
    hint = ""
    if isinstance(got, str) and schema.get("type") == "array":
        # "a,b" was meant as two items more often than as one holding a comma.
        of_strings = schema.get("items", {}).get("type", "string") == "string"
        items = [part.strip() for part in got.split(",") if part.strip()] if of_strings else []
        items = items or [got]
        hint = f", e.g. [{', '.join(_shown(item) for item in items)}]"
    problem = str(error["msg"]).removeprefix("Input ")  # "should be greater than or equal to 1"
    problem = problem[:1].lower() + problem[1:]
    return f"`{where}`={_shown(got)}: {problem}; give {expected(schema, root)}{hint}"


def invalid_arguments(tool: str, exc: ValidationError, input_schema: dict[str, Any]) -> str:
    """The whole error: one line for the agent, every bad argument in it."""
    problems = "; ".join(dict.fromkeys(describe_error(e, input_schema) for e in exc.errors()))
    return f"invalid arguments to {tool}: {problems}"
