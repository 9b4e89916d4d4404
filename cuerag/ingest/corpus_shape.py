"""Whether a JSON file found in a walked folder is a corpus. A documentation build or a project
tree holds JSON that is not (`bower.json`, `package.json`, a theme's settings): read as a corpus,
each failed the run's report with "expected a list of sentences or a string, got dict" (issue 30).
Inside a walked folder a JSON file is read only when it has a corpus's shape, and passed over with
the reason otherwise; so is one that is not valid JSON at all (a `.json` of some other program's
making, broken or in a dialect with comments), told apart in the report from a file of another
shape, so that a corpus cut short is seen there. A JSON file named on the command line is a corpus
as before, and its errors, with the line they are on, are the user's to see.

The shape is judged on the top level (and the first record), not on every record: a corpus with
one bad record deep inside has the shape, and fails loudly as before (a JSON Lines file whose
first line parses and holds a record, and a later line does not, among them)."""

from __future__ import annotations

from typing import Any

from cuerag.errors import InputError
from cuerag.ingest.artefacts import NOT_A_CORPUS, NOT_JSON

TEXT_KEYS = ("text", "paragraph_text", "contents", "content", "body")  # the record fields a text is read from


class NotACorpus(InputError):
    """A JSON file in a walked folder that does not have a corpus's shape: passed over, not failed."""

    left_out = NOT_A_CORPUS  # the report's reason (cuerag.ingest.artefacts)


class NotJson(NotACorpus):
    """A JSON file in a walked folder that does not parse (nor decode): passed over, not failed."""

    left_out = NOT_JSON


def _is_record(value: Any) -> bool:
    return isinstance(value, dict) and any(k in value for k in TEXT_KEYS)


def _is_text(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(s, str) for s in value))


def shape_problem(data: Any) -> str | None:
    """Why parsed JSON is not a corpus (a list of records, one record, or `{title: text}`), or None."""
    if isinstance(data, list):
        if data and _is_record(data[0]):
            return None
        return "a list whose first item is not a record with a text field" if data else "an empty list"
    if isinstance(data, dict):
        if _is_record(data) and "title" in data:
            return None
        if data and all(_is_text(v) for v in data.values()):
            return None
        return "an object whose values are not texts"
    return f"a JSON {type(data).__name__}"


def jsonl_shape_problem(first: Any) -> str | None:
    """Why JSON Lines are not a corpus (one record per line, judged on the first, parsed), or None."""
    return None if _is_record(first) else "its first line is not a record with a text field"
