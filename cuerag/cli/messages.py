"""Engine errors worded for a person at the command line: where an error names an argument by the
engine's field name (what an MCP tool is called with), the CLI names the flag that was typed."""

from __future__ import annotations

from cuerag.errors import BadCursor, CueRagError, InvalidArguments, NoIndexYet, UnknownDocumentIds

# The filter options' flags, by the filter field each sets (the CLI's options are declared with these).
FILTER_FLAGS = {"doc_ids": "--doc", "path_prefix": "--prefix", "path_glob": "--glob", "tags": "--tag"}


def flag(name: str) -> str:
    """A retrieval parameter's flag: its name with dashes (`top_n` → `--top-n`)."""
    return "--" + name.replace("_", "-")


def cli_message(exc: CueRagError) -> str:
    """The message of an engine error as the command line words it."""
    if isinstance(exc, InvalidArguments):
        if exc.what == "filter":
            return "; ".join(
                f"invalid {FILTER_FLAGS.get(p.name.split('.')[0], p.name.split('.')[0])}: {p.message}"
                for p in exc.problems
            )
        return "invalid options: " + "; ".join(p.describe(flag(p.name)) for p in exc.problems)
    if isinstance(exc, UnknownDocumentIds):
        return (
            f"unknown document id(s) given to {FILTER_FLAGS['doc_ids']}: {exc.shown}; use the doc_id of a hit, "
            "or see `cuerag documents`"
        )
    if isinstance(exc, BadCursor):
        return (
            "invalid --cursor: pass the one the previous page printed, unchanged, with the same corpus and "
            "filter options (or leave --cursor out to start from the first page)"
        )
    if isinstance(exc, NoIndexYet):
        return f"{exc.where}; run the eval once without --read-only to build it"
    return str(exc)
