"""Domain errors. Each message says what was wrong and what to do instead, in the engine's own
names (a parameter's field name, a document id). Errors about a caller's arguments carry them as
fields, so a front end can word them its own way: the CLI names its flags (`cuerag.cli.messages`),
the MCP tools their arguments."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class CueRagError(Exception):
    """Base class of every error the engine raises on purpose."""


class InputError(CueRagError):
    """A document, file or path that cannot be indexed (missing, empty, binary, malformed)."""


class NothingIndexed(InputError):
    """Every file given failed to read and the corpus held none of them: `failed` says which
    (path, reason), so that a watch can tell a repeat from news."""

    def __init__(self, failed: list[tuple[str, str]]) -> None:
        # Bounded: 2,000 unreadable files made an error of 194 KB. `failed` keeps them all.
        shown = "; ".join(f"{path}: {reason}" for path, reason in failed[:10])
        more = f"; and {len(failed) - 10:,} more files that failed" if len(failed) > 10 else ""
        super().__init__(f"nothing to index: {shown}{more}")
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


@dataclass(frozen=True)
class ArgumentProblem:
    """One argument that failed validation: its field name, what is wrong, the value given and,
    for a bounded number, the range allowed."""

    name: str
    message: str
    got: object = None
    allowed: tuple[object, object] | None = None
    show_got: bool = True  # False where the value is not worth echoing (a filter's list)

    def describe(self, shown: str | None = None) -> str:
        """'name: what is wrong (got X; allowed A..B)', the name shown as `shown` when given."""
        text = f"{shown or self.name}: {self.message}"
        if not self.show_got:
            return text
        text += f" (got {self.got!r}"
        if self.allowed is not None:
            text += f"; allowed {self.allowed[0]}..{self.allowed[1]}"
        return text + ")"


class InvalidArguments(ParameterError):
    """Arguments of one kind (`what`: "retrieval parameters", "filter") that failed validation."""

    def __init__(self, what: str, problems: Sequence[ArgumentProblem]) -> None:
        super().__init__(f"invalid {what}: " + "; ".join(p.describe() for p in problems))
        self.what = what
        self.problems = list(problems)


class UnknownDocumentIds(ParameterError):
    """A filter named document ids the corpus does not hold (`shown`: the first few, quoted)."""

    def __init__(self, doc_ids: Sequence[str]) -> None:
        self.doc_ids = list(doc_ids)
        self.shown = ", ".join(repr(d) for d in self.doc_ids[:5])
        super().__init__(f"unknown doc_ids in filter: {self.shown}; use doc_id values from hits or list_documents")


class BadCursor(ParameterError):
    """A listing cursor that was not made for this listing (another corpus or filter, or edited)."""

    def __init__(self) -> None:
        super().__init__(
            "invalid cursor: pass next_cursor from the previous page unchanged, with the same corpus and "
            "filter (or leave cursor out to start from the first page)"
        )


class ModelLoadError(CueRagError):
    """A configured model could not be loaded."""


class StoreError(CueRagError):
    """The vector store refused an operation or holds an incompatible index."""


class ReadOnlyError(CueRagError):
    """A write asked of an engine opened read-only."""


class NoIndexYet(ReadOnlyError):
    """A read-only evaluation of a corpus file that no earlier run indexed into this data directory."""

    def __init__(self, corpus_file: object, data_dir: object, corpus: str) -> None:
        self.where = f"read-only: {corpus_file} has no index in {data_dir} (its corpus would be {corpus!r})"
        super().__init__(f"{self.where}; evaluate it once with writing allowed (read_only off) to build it")


class IndexBusy(StoreError):
    """The embedded index is held by another process (`holder`, as its lock file names it): with
    sharing on, a process that meets it attaches to the holder instead (cuerag.engine.sharing)."""

    def __init__(self, message: str, holder: str) -> None:
        super().__init__(message)
        self.holder = holder


class SharingError(CueRagError):
    """A call through the process that serves the index could not be made or completed: it ended
    during a call that is not safe to repeat, or runs with other settings (cuerag.engine.sharing)."""


class OwnerBusy(SharingError):
    """The process serving the index refused a call: `calls` calls were in progress there, the
    most it serves at once. Transient: the same call made again in a moment may be served, so a
    caller that retries may retry this one (nothing of the call was read)."""

    def __init__(self, pid: int, calls: int) -> None:
        super().__init__(
            f"the process serving this index (pid {pid}) is busy: {calls} calls in progress, the most it serves "
            "at once; try again in a moment"
        )
        self.pid = pid
        self.calls = calls


class OwnerNotAnswering(SharingError):
    """The process serving the index does not answer: it is stopped (SIGSTOP, Ctrl-Z, a debugger)
    or hung. It still holds the index, so no other process can take it over: it must be continued
    or ended (`pid`: that process, where the system says; None where it does not)."""

    def __init__(self, message: str, pid: int | None) -> None:
        super().__init__(message)
        self.pid = pid


class StorageFullError(StoreError):
    """Too little free space on the data directory's filesystem for a write (and its margin)."""


class StorageUnwritableError(StoreError):
    """The data directory's filesystem cannot be written (remounted read-only, say)."""


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
