"""Glob and `.gitignore` patterns matched in time linear in the path, whatever the pattern.

pathspec turns each pattern into a regular expression. Under Python's `re`, which backtracks, a
line such as `*?*?*?*?*?*?*?*?*?*?*?*?!` takes exponential time against an ordinary file name
(each further `*?` pair about six times longer), holding the GIL: the server's event loop stops
and the CLI does not see Ctrl-C. A `.gitignore` arrives with any cloned folder, so no pattern may
do that. pathspec matches through RE2 (google-re2, a dependency), which never backtracks; RE2
compiles a set of patterns into one automaton, bounded in memory, so patterns are compiled in
blocks, and a pattern RE2 cannot take is refused with a reason.

Where RE2 is missing (a platform without its wheel), Python's engine runs, and a pattern with more
wildcards than `MAX_WILDCARDS_WITHOUT_RE2` is refused instead: few wildcards bound the
backtracking (by the path's length to their number), and real ignore files need few.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pathspec

from cuerag.errors import InputError

try:
    import re2  # noqa: F401  (pathspec's "re2" backend imports it: only its presence is checked here)
except ImportError:  # pragma: no cover - google-re2 is a dependency; this is the fallback
    RE2 = False
else:
    RE2 = True

# Patterns per RE2 set: a set of a thousand typical lines compiles in a quarter second; RE2 refuses
# a set past its memory budget, so blocks are kept well under that.
_BLOCK = 256
# A glob longer than this is refused: no real one comes near it, and it bounds compile time.
MAX_PATTERN_CHARS = 1024
MAX_WILDCARDS_WITHOUT_RE2 = 3


@dataclass(frozen=True)
class Refused:
    """A pattern left out, with why (for a warning naming its line)."""

    index: int
    reason: str


@dataclass
class Patterns:
    """Gitignore-style patterns with git's rule that the last matching pattern decides."""

    blocks: list[pathspec.GitIgnoreSpec] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.blocks)

    def match_file(self, path: str) -> bool:
        # The last block with a matching pattern holds the last matching pattern overall.
        for block in reversed(self.blocks):
            result = block.check_file(path)
            if result.include is not None:
                return bool(result.include)
        return False


def compile_patterns(lines: Sequence[str]) -> Patterns:
    """The patterns of `lines`; a line that is not valid, or cannot be matched in linear time, is
    left out and listed in `refused` (git too skips a line it cannot read)."""
    kept: list[tuple[int, str]] = []
    out = Patterns()
    for index, line in enumerate(lines):
        reason = _refusal(line)
        if reason is not None:
            out.refused.append(Refused(index, reason))
            continue
        kept.append((index, line))
    for start in range(0, len(kept), _BLOCK):
        _compile_into(out, kept[start : start + _BLOCK])
    out.refused.sort(key=lambda r: r.index)
    return out


def strict_patterns(lines: Iterable[str], what: str) -> Patterns:
    """Patterns given by the caller (include / exclude): one that is refused is an error naming it."""
    listed = list(lines)
    compiled = compile_patterns(listed)
    if compiled.refused:
        first = compiled.refused[0]
        raise InputError(f"{what} glob {listed[first.index][:100]!r} is refused: {first.reason}")
    return compiled


def _refusal(line: str) -> str | None:
    if len(line) > MAX_PATTERN_CHARS:
        return f"longer than {MAX_PATTERN_CHARS} characters"
    if not RE2 and sum(line.count(c) for c in "*?[") > MAX_WILDCARDS_WITHOUT_RE2:
        return f"more than {MAX_WILDCARDS_WITHOUT_RE2} wildcards (install google-re2 to match any pattern)"
    try:
        pathspec.GitIgnoreSpec.from_lines([line], backend="simple")  # parses only: nothing is matched
    except ValueError:  # pathspec's GitIgnorePatternError
        return "not a valid pattern"
    return None


def _compile_into(out: Patterns, lines: list[tuple[int, str]]) -> None:
    """The lines as one RE2 set, or, when RE2 refuses the set (over its memory budget), as two
    halves, down to single lines; a single line RE2 refuses is refused."""
    texts = [line for _, line in lines]
    if not RE2:
        out.blocks.append(pathspec.GitIgnoreSpec.from_lines(texts, backend="simple"))
        return
    try:
        out.blocks.append(pathspec.GitIgnoreSpec.from_lines(texts, backend="re2"))
    except Exception:  # re2.error
        if len(lines) == 1:
            out.refused.append(Refused(lines[0][0], "too large for the linear-time matcher"))
            return
        half = len(lines) // 2
        _compile_into(out, lines[:half])
        _compile_into(out, lines[half:])
