"""Index reports of a bounded size, whatever the number of files.

A report lists files by what happened to them; a no-change sync of 2,000 files listed all 2,000 as
unchanged (149 KB as structured content, and as much again as text), and 2,000 unreadable files
made an error of 194 KB. So a report gives every count (`files`) and lists the first
`REPORTED_FILES` of each kind that says something happened; unchanged files (`skipped`) are counted,
not listed, since a no-op re-index of 158 files still listed each (14 KB, issue 30). The full lists
are there on request (`full_report`).

The counts read back (`file_counts`, and the lines `files_line` and `passed_over_line` that the
CLI's report and the MCP tool's text both print) come from here too, so both say the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the bounds are read by the CLI, which need not import the index to print
    from cuerag.index.report import IndexReport

REPORTED_FILES = 100
FILE_LISTS = ("added", "changed", "removed", "skipped", "failed", "warnings")
COUNTED_ONLY = frozenset({"skipped"})  # nothing happened to these: the count says enough


def count_files(report: IndexReport) -> None:
    """Record how many files each list holds, before any list is cut."""
    report.files = {name: len(getattr(report, name)) for name in FILE_LISTS}


def file_counts(report: IndexReport) -> dict[str, int]:
    """How many files each list held before it was cut (the lists themselves when never cut)."""
    return {name: report.files.get(name, len(getattr(report, name))) for name in FILE_LISTS}


def files_line(counts: dict[str, int]) -> str:
    return (
        f"files: {counts['added']} added, {counts['changed']} changed, {counts['removed']} removed, "
        f"{counts['skipped']} unchanged, {counts['failed']} failed"
    )


def passed_over_line(passed_over: dict[str, int]) -> str:
    """The files of walked folders in formats not read, by suffix."""
    kinds = ", ".join(f"{n} {suffix or '(no suffix)'}" for suffix, n in sorted(passed_over.items()))
    return f"passed over, in formats not read: {kinds}"


def cut_lists(report: IndexReport, limit: int = REPORTED_FILES) -> IndexReport:
    """The report with each file list cut to its first `limit` entries, and the unchanged files to
    none (`files` keeps the counts); `lists_cut` when a listed kind had more than `limit`."""
    if not report.files:
        count_files(report)
    bounds = {name: 0 if name in COUNTED_ONLY else limit for name in FILE_LISTS}
    cut = {
        name: getattr(report, name)[: bounds[name]] for name in FILE_LISTS if len(getattr(report, name)) > bounds[name]
    }
    if not cut:
        return report
    # Only a list that lists files can be cut: unchanged files are never listed (the count says
    # enough), so leaving them out shortens nothing a reader would look for.
    shortened = any(name not in COUNTED_ONLY for name in cut)
    return report.model_copy(update={**cut, "lists_cut": shortened})
