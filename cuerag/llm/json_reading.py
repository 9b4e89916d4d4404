"""Reading JSON out of an LLM's answer, which is rarely only JSON: the value may sit in a code
fence, after a sentence of preamble (which may hold brackets of its own), or carry a trailing
comma or a missing quote. A hostile or looping model may also send huge, deeply nested or
non-Unicode output: none of that may crash the caller. A reasoning model may also think aloud
before it answers (`without_thinking`)."""

from __future__ import annotations

import json
import re

import json_repair

_THINKING = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_OPENERS = re.compile(r"[\[{]")
# An answer past this is a runaway generation, not a list of statements worth repairing.
MAX_ANSWER_CHARS = 200_000
# Openers tried in turn when prose before the value holds brackets ("see [1]: [...]").
_MAX_STARTS = 20


def load_lenient_json(answer: str) -> object:
    """The first JSON object, or list holding strings or objects, in the answer; else the first
    list or object repaired; None when there is none."""
    fenced = _FENCE.search(answer)
    body = (fenced.group(1) if fenced else answer)[:MAX_ANSWER_CHARS]
    starts = [m.start() for m in _OPENERS.finditer(body)][:_MAX_STARTS]
    for start in starts:
        try:
            value, _ = json.JSONDecoder().raw_decode(body[start:])  # ignores prose after the value
            if _holds_text(value):
                return value
        except (ValueError, RecursionError):
            continue
    if not starts:
        return None
    try:
        # The first opener, repaired: a cut-off or slightly broken list.
        return json_repair.loads(body[starts[0] :])
    except Exception:  # json_repair gives up on some inputs with assorted exception types
        return None


def _holds_text(value: object) -> bool:
    """An object, or a list with a string or object in it: not a citation like "[3]"."""
    if isinstance(value, dict):
        return True
    return isinstance(value, list) and any(isinstance(v, str | dict) for v in value)


def is_text(value: object) -> bool:
    """A string that is valid Unicode (a lone surrogate from a "\\ud800" escape is not; it would
    break the tokenizer, the hashing of ids and the store)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def string_list(answer: str) -> list[str]:
    """The strings of a JSON list in the answer (whitespace collapsed, empties dropped)."""
    data = load_lenient_json(answer)
    if not isinstance(data, list):
        return []
    return [" ".join(item.split()) for item in data if is_text(item) and item.strip()]


def without_thinking(answer: str) -> str:
    """The answer without a reasoning model's `<think>…</think>` (an unclosed one to the end)."""
    return _THINKING.sub("", answer).strip()
