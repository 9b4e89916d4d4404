"""An index report's file lists, bounded (cuerag.index.report_bounds): `lists_cut` says a list was
shortened, and only then. Unchanged files are counted, never listed, by design: a re-index that
skipped them all cut nothing a reader would look for, yet said `lists_cut: true`."""

from __future__ import annotations

from cuerag.index.report import IndexReport
from cuerag.index.report_bounds import cut_lists
from cuerag.ingest.folders import FileOutcome


def files(n: int, reason: str = "") -> list[FileOutcome]:
    return [FileOutcome(path=f"f{i}.md", reason=reason) for i in range(n)]


def test_unchanged_files_counted_not_listed_are_no_cut() -> None:
    report = cut_lists(IndexReport(corpus="c", added=files(2), skipped=files(3, "unchanged")), limit=5)
    assert (len(report.added), report.skipped, report.files["skipped"]) == (2, [], 3)
    assert not report.lists_cut


def test_a_list_over_the_bound_is_cut_and_says_so() -> None:
    report = cut_lists(IndexReport(corpus="c", failed=files(7, "bad bytes"), skipped=files(3)), limit=5)
    assert (len(report.failed), report.files["failed"]) == (5, 7)
    assert report.lists_cut
    assert not cut_lists(IndexReport(corpus="c", added=files(5)), limit=5).lists_cut  # at the bound: whole
