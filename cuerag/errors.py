"""Domain errors. Each message says what was wrong and what to do instead; the CLI and the MCP
tools show it as is."""

from __future__ import annotations


class CueRagError(Exception):
    """Base class of every error the engine raises on purpose. `cli`: the message as the command
    line words it, where the message names what an MCP tool is called with (a tool, an argument)
    and a person at the command line typed a command or a flag instead."""

    def __init__(self, *args: object, cli: str | None = None) -> None:
        super().__init__(*args)
        self.cli = cli

    def for_cli(self) -> str:
        return self.cli if self.cli is not None else str(self)


class InputError(CueRagError):
    """A document, file or path that cannot be indexed (missing, empty, binary, malformed)."""


class NothingIndexed(InputError):
    """Every file given failed to read and the corpus held none of them: `failed` says which
    (path, reason), so that a watch can tell a repeat from news."""

    def __init__(self, failed: list[tuple[str, str]]) -> None:
        super().__init__("nothing to index: " + "; ".join(f"{path}: {reason}" for path, reason in failed))
        self.failed = failed


class RequestTooLarge(InputError):
    """One request would read more bytes, across its files, than `max_request_bytes` allows: the
    whole request is refused (not one file skipped), since the rest would be over the cap too."""


class CorpusNotFoundError(CueRagError):
    """The named corpus does not exist."""

    def __init__(self, name: str, available: list[str]) -> None:
        listed = ", ".join(sorted(available)) if available else "none yet (index one first)"
        twins = [a for a in available if a.casefold() == name.casefold()]
        hint = f" (names are case-sensitive: did you mean {twins[0]!r}?)" if twins else ""
        super().__init__(f"unknown corpus {name!r}; corpora that exist: {listed}{hint}")
        self.name = name
        self.available = available


class InvalidNameError(CueRagError):
    """A corpus name with characters the store cannot hold."""


class ParameterError(CueRagError):
    """A retrieval parameter outside its allowed range."""


class ModelLoadError(CueRagError):
    """A configured model could not be loaded."""


class StoreError(CueRagError):
    """The vector store refused an operation or holds an incompatible index."""


class ReadOnlyError(CueRagError):
    """A write asked of an engine opened read-only."""


class StorageFullError(StoreError):
    """Too little free space on the data directory's filesystem for a write (and its margin)."""


class Cancelled(CueRagError):
    """The caller cancelled an index run; it stopped between two steps, leaving the corpus as a
    killed run would (earlier data intact; a rerun completes it)."""


class LLMError(CueRagError):
    """The configured LLM cannot be used: unreachable after retries, a wrong key, an unknown model."""


class LLMRefusedError(LLMError):
    """The endpoint refused this one request (400, 413, 422: too long, filtered, malformed) while
    the LLM itself works: the caller can go on without this answer."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (a library's may run to pages), or its type's name
    when it has none: what a one-line reason quotes."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
