"""Reading JSON out of an LLM's answer, which is rarely only JSON: the value may sit in a code
fence, after a sentence of preamble, or carry a trailing comma or a missing quote."""

from __future__ import annotations

import json
import re

import json_repair

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def load_lenient_json(answer: str) -> object:
    """The first JSON list or object in the answer, repaired if need be; None when there is none."""
    fenced = _FENCE.search(answer)
    body = fenced.group(1) if fenced else answer
    start = min((i for i in (body.find("["), body.find("{")) if i >= 0), default=-1)
    if start < 0:
        return None
    body = body[start:]
    try:
        value, _ = json.JSONDecoder().raw_decode(body)  # ignores prose after the value
        return value
    except ValueError:
        pass
    try:
        return json_repair.loads(body)
    except Exception:  # json_repair gives up on some inputs with assorted exception types
        return None


def string_list(answer: str) -> list[str]:
    """The strings of a JSON list in the answer (whitespace collapsed, empties dropped)."""
    data = load_lenient_json(answer)
    if not isinstance(data, list):
        return []
    return [" ".join(item.split()) for item in data if isinstance(item, str) and item.strip()]
