"""Folders built to hurt the indexer: a .gitignore that is a link, a FIFO, huge or invalid; front
matter that expands; files that clash on a document id or on a name that is not UTF-8; nesting
past what a parser keeps; a symlink to a large tree under a watched folder. Each is reported, and
the rest of the folder is indexed."""

from __future__ import annotations

import json
import os
import queue
import threading
from pathlib import Path

import pytest

from cuerag.engine.facade import CueRag
from cuerag.engine.watch import _folders
from cuerag.errors import InputError
from cuerag.ingest.folders import MAX_GITIGNORE_BYTES, Walk, WalkRules, walk_paths
from cuerag.ingest.formats.html import extract_html
from cuerag.ingest.formats.markdown import MAX_MARKDOWN_NESTING, extract_markdown


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def walk_within(folder: Path, seconds: float = 30) -> Walk:
    """The walk of `folder`, failing the test (not hanging it) if the walk blocks."""
    done: queue.Queue[Walk | BaseException] = queue.Queue()

    def run() -> None:
        try:
            done.put(walk_paths([folder]))
        except BaseException as exc:  # the test's thread raises it
            done.put(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=seconds)
    if worker.is_alive():
        for fifo in folder.rglob(".gitignore"):  # unblock a reader stuck on a FIFO
            if fifo.is_fifo():
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("the walk blocked")
    result = done.get()
    if isinstance(result, BaseException):
        raise result
    return result


# ---- .gitignore ---------------------------------------------------------------------------------


def test_a_gitignore_linked_from_outside_is_not_followed(tmp_path: Path) -> None:
    outside = write(tmp_path / "outside" / "rules", "*.md\ndb_password=secret\\\n")
    root = tmp_path / "root"
    write(root / "a.md", "# A\n\nAda wrote notes.\n")
    (root / ".gitignore").symlink_to(outside)
    walk = walk_within(root)
    assert [f.source for f in walk.files] == ["a.md"]  # its "*.md" was not obeyed
    (warning,) = walk.warnings
    assert warning.path.endswith(".gitignore") and "symbolic link: not followed" in warning.reason
    assert "secret" not in warning.reason


def test_a_gitignore_that_is_a_fifo_does_not_block_the_walk(tmp_path: Path) -> None:
    write(tmp_path / "a.md", "# A\n\nAda wrote notes.\n")
    os.mkfifo(tmp_path / ".gitignore")
    walk = walk_within(tmp_path)
    assert [f.source for f in walk.files] == ["a.md"]
    assert [w.reason for w in walk.warnings] == ["not a regular file; its rules are not read"]


def test_a_huge_gitignore_is_not_read(tmp_path: Path) -> None:
    write(tmp_path / "a.md", "# A\n\nAda wrote notes.\n")
    with open(tmp_path / ".gitignore", "wb") as f:
        f.write(b"a.md\n")
        f.truncate(MAX_GITIGNORE_BYTES + 1)  # sparse: the size is what is checked, before reading
    walk = walk_within(tmp_path)
    assert [f.source for f in walk.files] == ["a.md"]
    assert [w.reason for w in walk.warnings] == ["over 1024 KiB; its rules are not read"]


def test_invalid_gitignore_lines_are_dropped_and_the_rest_obeyed(tmp_path: Path) -> None:
    write(tmp_path / ".gitignore", "drafts/\n!\nnotes/trailing\\\n")
    write(tmp_path / "drafts" / "plan.md", "draft")
    write(tmp_path / "notes" / "a.md", "a")
    walk = walk_within(tmp_path)
    assert [f.source for f in walk.files] == ["notes/a.md"]
    assert [w.reason for w in walk.warnings] == ["not a valid pattern on line 2, 3; those lines are ignored"]


def test_gitignore_warnings_reach_the_index_report(engine: CueRag, tmp_path: Path) -> None:
    tmp_path = tmp_path / "docs"  # the engine's data directory is in tmp_path too
    write(tmp_path / "a.md", "# A\n\nAda wrote notes.\n")
    write(tmp_path / "photo.jpeg", "not read")
    write(tmp_path / "notes.txt.gz", "not read")
    write(tmp_path / ".gitignore", "!\n")
    report = engine.index_paths("hostile-ignore", [tmp_path])
    assert [f.source for f in walk_paths([tmp_path]).files] == ["a.md"]
    assert [w.reason for w in report.warnings] == ["not a valid pattern on line 1; those lines are ignored"]
    assert report.failed == [] and len(report.added) == 1
    assert report.passed_over == {".jpeg": 1, ".gz": 1}


# ---- front matter and nesting -------------------------------------------------------------------


def laughs(levels: int) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels + 1)]
    return "---\n" + "\n".join(lines) + "\n---\n# Bomb\n\ntext\n"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (laughs(7), "aliases (*name) are not accepted in front matter"),
        ("---\nx: " + "[" * 5000 + "]" * 5000 + "\n---\n# Deep\n\ntext\n", "nested deeper than 20 levels"),
    ],
)
def test_front_matter_that_would_expand_is_refused_and_the_rest_indexed(
    engine: CueRag, tmp_path: Path, text: str, reason: str
) -> None:
    tmp_path = tmp_path / "docs"
    write(tmp_path / "bad.md", text)
    write(tmp_path / "good.md", "# Good\n\nBergen has a fish market.\n")
    report = engine.index_paths("hostile-yaml", [tmp_path])
    ((name, why),) = [(Path(f.path).name, f.reason) for f in report.failed]
    assert name == "bad.md" and why.endswith(reason)
    assert set(engine.graph("hostile-yaml").chunk_docs) == {"good.md"}


def test_a_reader_failing_in_an_undeclared_way_skips_only_that_file(
    engine: CueRag, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp_path = tmp_path / "docs"
    import cuerag.index.sync

    real = cuerag.index.sync.parse_file

    def parse(path: Path, *args: object, **kwargs: object) -> object:
        if path.name == "bad.md":
            raise RecursionError("maximum recursion depth exceeded")
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cuerag.index.sync, "parse_file", parse)
    write(tmp_path / "bad.md", "# Bad\n\ntext\n")
    write(tmp_path / "good.md", "# Good\n\nBergen has a fish market.\n")
    report = engine.index_paths("hostile-reader", [tmp_path])
    assert [(Path(f.path).name, f.reason) for f in report.failed] == [
        ("bad.md", "could not be read (RecursionError: maximum recursion depth exceeded)")
    ]
    assert set(engine.graph("hostile-reader").chunk_docs) == {"good.md"}


def test_markdown_nested_deeper_than_commonmark_s_default_keeps_its_text() -> None:
    nested = "Intro line.\n\n" + "".join("  " * i + f"- item {i}\n" for i in range(30)) + "\nOutro line.\n"
    quote = "Intro.\n\n" + ">" * 25 + " deep quote\n\nAfter the quote.\n"
    assert extract_markdown(nested.encode(), name="list.md", source="list.md").text.endswith("Outro line.")
    assert "deep quote" in extract_markdown(quote.encode(), name="quote.md", source="quote.md").text


def test_markdown_past_the_nesting_limit_is_refused_not_cut() -> None:
    from cuerag.errors import InputError

    quote = "Intro.\n\n" + ">" * (MAX_MARKDOWN_NESTING + 50) + " deep quote\n\nAfter the quote.\n"
    with pytest.raises(InputError, match="nested over 100 levels deep"):
        extract_markdown(quote.encode(), name="quote.md", source="quote.md")


def test_html_nested_past_libxml2_s_default_keeps_what_follows() -> None:
    page = "<html><body><p>Top.</p>" + "<div>" * 300 + "<p>Deep.</p>" + "</div>" * 300 + "<p>After.</p></body></html>"
    text = extract_html(page.encode(), name="deep.html", source="deep.html").text
    assert text.split() == ["Top.", "Deep.", "After."]
    huge = '<html><body><p title="' + "a" * (11 * 2**20) + '">Tagged.</p><p>After.</p></body></html>'
    assert extract_html(huge.encode(), name="huge.html", source="huge.html").text.split() == ["Tagged.", "After."]


# ---- identities ---------------------------------------------------------------------------------


def test_a_json_record_cannot_take_another_file_s_document_over(engine: CueRag, tmp_path: Path) -> None:
    tmp_path = tmp_path / "docs"
    write(tmp_path / "a.md", "# A\n\nThe company was founded in Oslo.\n")
    write(tmp_path / "z.json", json.dumps([{"id": "a.md", "title": "A", "text": "The company was founded in Moscow."}]))
    for _ in range(3):  # the same answer at every sync: the two files never trade places
        report = engine.index_paths("hostile-ids", [tmp_path], sync=True)
        assert [(Path(f.path).name, f.reason) for f in report.failed] == [
            (
                "z.json",
                f"document id 'a.md' is already the id of a document from {tmp_path.resolve()}/a.md; "
                "ids must be unique in a corpus",
            )
        ]
        assert engine.graph("hostile-ids").chunk_texts == ["A\n\nThe company was founded in Oslo."]


def test_file_names_that_are_not_utf8_stay_apart(engine: CueRag, tmp_path: Path) -> None:
    tmp_path = tmp_path / "docs"
    tmp_path.mkdir()
    folder = os.fsencode(tmp_path)
    for name, text in ((b"x\xff.txt", b"Bergen has a fish market."), (b"x\xfe.txt", b"Tromso has a cathedral.")):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(text)
    report = engine.index_paths("hostile-names", [tmp_path], sync=True)
    assert sorted(Path(f.path).name for f in report.added) == ["x\\xfe.txt", "x\\xff.txt"]
    assert sorted(set(engine.graph("hostile-names").chunk_docs)) == ["x\\xfe.txt", "x\\xff.txt"]
    again = engine.index_paths("hostile-names", [tmp_path], sync=True)
    assert (again.files["skipped"], again.added, again.changed) == (2, [], [])


# ---- watching -----------------------------------------------------------------------------------


def test_a_watch_does_not_follow_a_link_to_a_folder(tmp_path: Path) -> None:
    big = tmp_path / "elsewhere"
    for i in range(3):
        (big / f"d{i}").mkdir(parents=True)
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / ".obsidian").mkdir()
    (root / "link").symlink_to(big)
    watched = _folders(root.resolve(), WalkRules(), tmp_path / "data")
    assert watched == [root.resolve(), root.resolve() / "sub"]


# ---- issue 29: inputs that must not stall a run -----------------------------------------------

# Python's regular expressions backtrack on it: each further `*?` pair about six times slower.
CATASTROPHIC_GLOB = "*?*?*?*?*?*?*?*?*?*?*?*?!"

_WALK_IN_A_CHILD = """
import sys, time
from pathlib import Path
from cuerag.ingest.folders import WalkRules, walk_paths
folder, exclude = sys.argv[1], sys.argv[2:]
started = time.perf_counter()
walk = walk_paths([Path(folder)], rules=WalkRules(exclude=tuple(exclude)))
print(len(walk.files), [w.reason for w in walk.warnings], round(time.perf_counter() - started, 3))
"""


def _walk_in_a_child(folder: Path, *exclude: str, seconds: float = 20) -> str:
    """The walk in its own process, killed after `seconds`: a backtracking match holds the GIL, so
    a thread could neither be timed out nor stopped."""
    import subprocess
    import sys

    try:
        done = subprocess.run(
            [sys.executable, "-c", _WALK_IN_A_CHILD, str(folder), *exclude],
            capture_output=True,
            text=True,
            timeout=seconds,
            cwd=Path(__file__).parents[2],  # the checkout: its cuerag, not an installed one
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the walk took over {seconds} s")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


@pytest.mark.parametrize("where", ["gitignore", "exclude"])
def test_a_catastrophic_glob_is_matched_in_linear_time(tmp_path: Path, where: str) -> None:
    """Issue 29, item 2: the 25-character glob froze the server (exponential backtracking)."""
    folder = tmp_path / "docs"
    for n in range(20):
        write(folder / f"{'a' * 40}-{n}.md", f"# Note {n}\n\nText {n}.\n")
    if where == "gitignore":
        write(folder / ".gitignore", CATASTROPHIC_GLOB + "\n")
        out = _walk_in_a_child(folder)
    else:
        out = _walk_in_a_child(folder, CATASTROPHIC_GLOB)
    count, _, seconds = out.rpartition(" ")
    assert count.startswith("20 ")  # no name ends in '!': nothing is left out
    assert float(seconds) < 5, out


def test_refused_gitignore_lines_are_told_and_the_rest_obeyed(tmp_path: Path) -> None:
    from cuerag.ingest.globs import MAX_PATTERN_CHARS

    write(tmp_path / ".gitignore", "drafts/\n" + "a" * (MAX_PATTERN_CHARS + 1) + "\n")
    write(tmp_path / "drafts" / "plan.md", "draft")
    write(tmp_path / "notes" / "a.md", "a")
    walk = walk_within(tmp_path)
    assert [f.source for f in walk.files] == ["notes/a.md"]
    assert [w.reason for w in walk.warnings] == [
        f"longer than {MAX_PATTERN_CHARS} characters on line 2; those lines are ignored"
    ]


def test_a_gitignore_of_many_lines_keeps_the_last_match_rule(tmp_path: Path) -> None:
    # Over one RE2 set's worth of lines: the patterns are split in blocks, the last match decides.
    lines = [f"skip-{n}-*.md" for n in range(1000)] + ["*.md", "!keep.md"]
    write(tmp_path / ".gitignore", "\n".join(lines) + "\n")
    for name in ("keep.md", "skip-3-x.md", "other.md"):
        write(tmp_path / name, name)
    assert [f.source for f in walk_within(tmp_path).files] == ["keep.md"]


def test_a_folder_nested_a_thousand_levels_deep_is_walked(tmp_path: Path) -> None:
    """Issue 29, item 6: os.walk recursed once per level and the run died with RecursionError."""
    deep = tmp_path / "root"
    here = deep
    deep.mkdir()
    for _ in range(1100):  # one level at a time: Path.mkdir(parents=True) recurses too
        here = here / "d"
        here.mkdir()
    (here / "bottom.md").write_text("# Bottom\n\nThe deepest note.\n")
    write(deep / "top.md", "# Top\n\nThe top note.\n")
    try:
        walk = walk_within(deep)
        watched = _folders(deep.resolve(), WalkRules(), tmp_path / "data")
    finally:
        _remove_deep(deep)  # pytest's own clean-up (shutil.rmtree) recurses once per level
    assert [f.source for f in walk.files] == ["top.md"]
    # Reached, and refused for what it is: its id would be 2,200 characters long.
    assert [(Path(f.path).name, f.reason) for f in walk.failed] == [
        ("bottom.md", "path relative to the root is over 256 characters")
    ]
    assert len(watched) == 1101


def _remove_deep(top: Path) -> None:
    """Remove a tree without recursion: folders deepest first."""
    folders, pending = [], [str(top)]
    while pending:
        here = pending.pop()
        folders.append(here)
        with os.scandir(here) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                else:
                    os.unlink(entry.path)
    for folder in reversed(folders):
        os.rmdir(folder)


def test_duplicate_paths_are_walked_once(tmp_path: Path) -> None:
    """Issue 29, item 4: paths=[folder] * 30 walked, read and parsed the folder thirty times."""
    for n in range(5):
        write(tmp_path / "docs" / f"n{n}.md", f"# N{n}\n\nText.\n")
    folder = tmp_path / "docs"
    walk = walk_paths([folder] * 30 + [folder / "n1.md", str(folder) + "/"])
    assert [f.source for f in walk.files] == [f"n{n}.md" for n in range(5)]
    assert walk.scopes == [folder.resolve().as_posix(), f"{folder.resolve().as_posix()}/n1.md"]


def test_the_walk_sees_a_cancel_at_every_folder(tmp_path: Path) -> None:
    from cuerag.errors import Cancelled

    for n in range(30):
        write(tmp_path / f"f{n}" / "a.md", "a")
    asked = 0

    def should_stop() -> bool:
        nonlocal asked
        asked += 1
        return asked > 5

    with pytest.raises(Cancelled, match="walking"):
        walk_paths([tmp_path], should_stop=should_stop)
    assert asked == 6


def test_a_request_over_the_file_cap_is_refused_whole(tmp_path: Path) -> None:
    from cuerag.errors import RequestTooLarge

    for n in range(12):
        write(tmp_path / f"n{n}.md", "a")
    with pytest.raises(RequestTooLarge, match=r"more than 10 files.*CUERAG_MAX_FILES_PER_REQUEST"):
        walk_paths([tmp_path], max_files=10)
    assert len(walk_paths([tmp_path], max_files=12).files) == 12


def test_reading_and_parsing_see_a_cancel_at_every_file(engine: CueRag, tmp_path: Path) -> None:
    from cuerag.errors import Cancelled
    from cuerag.index.sync import plan_sync

    for n in range(20):
        write(tmp_path / "docs" / f"n{n}.md", f"# N{n}\n\nText {n}.\n")
    walk = walk_paths([tmp_path / "docs"])
    asked = 0

    def should_stop() -> bool:
        nonlocal asked
        asked += 1
        return asked > 3

    with pytest.raises(Cancelled, match="reading"):
        plan_sync(walk, None, sync=False, strict=False, should_stop=should_stop)
    assert asked == 4


def test_the_data_directory_under_a_folder_is_never_walked(models: object, tmp_path: Path) -> None:
    """Issue 29, item 8: with the data directory inside the folder, its files were walked."""
    from cuerag.config import Settings

    folder = tmp_path / "notes"
    write(folder / "a.md", "# A\n\nAda wrote notes.\n")
    write(folder / "data" / "stray.md", "# Stray\n\nNot a note.\n")  # inside the data directory
    engine = CueRag(Settings(data_dir=folder / "data"), models=models)  # type: ignore[arg-type]
    try:
        report = engine.index_paths("notes", [folder])
        assert [Path(f.path).name for f in report.added] == ["a.md"]
        assert report.failed == [] and set(engine.graph("notes").chunk_docs) == {"a.md"}
    finally:
        engine.close()


@pytest.mark.parametrize("named", ["data", "data/sub", "data/sub/stray.md", "data/../data/sub"])
def test_the_data_directory_named_outright_is_refused(tmp_path: Path, named: str) -> None:
    """Passed over inside a walked folder, the data directory was walked when named itself (or a
    folder or file in it): `index_corpus paths=["data"]` read the store's own files."""
    folder = tmp_path / "notes"
    write(folder / "a.md", "# A\n\nAda wrote notes.\n")
    write(folder / "data" / "sub" / "stray.md", "# Stray\n\nNot a note.\n")
    with pytest.raises(InputError, match="in the data directory"):
        walk_paths([folder / named], skip=[folder / "data"])
    assert [f.source for f in walk_paths([folder], skip=[folder / "data"]).files] == ["a.md"]


def test_a_report_lists_the_first_files_and_counts_them_all(engine: CueRag, tmp_path: Path) -> None:
    """Issue 29, item 7: a no-change sync of 2,000 files returned 149 KB listing each."""
    from cuerag.index.report_bounds import REPORTED_FILES

    folder = tmp_path / "docs"
    count = REPORTED_FILES + 30
    for n in range(count):
        write(folder / f"n{n:03}.md", f"# N{n}\n\nNote {n} is about town {n}.\n")
    for n in range(REPORTED_FILES + 5):
        (folder / f"bad{n:03}.txt").write_bytes(b"caf\xe9")
    first = engine.index_paths("bounded", [folder])
    assert (len(first.added), first.files["added"]) == (REPORTED_FILES, count)
    assert (len(first.failed), first.files["failed"]) == (REPORTED_FILES, REPORTED_FILES + 5)
    again = engine.index_paths("bounded", [folder], sync=True)
    assert (len(again.skipped), again.files["skipped"], again.lists_cut) == (0, count, True)
    assert len(again.model_dump_json()) < 40_000
    full = engine.index_paths("bounded", [folder], sync=True, full_report=True)
    assert len(full.skipped) == count and not full.lists_cut


# A no-op re-index of a documentation build's 158 files returned 14 KB (issue 30, item 6): the bound.
NO_OP_REPORT_BYTES = 2_048


def test_a_no_op_re_index_of_158_files_reports_counts_in_under_2_kb(engine: CueRag, tmp_path: Path) -> None:
    """The report of a re-index that changes nothing: counts, no line per unchanged file (the
    MCP tool's text and structured content are this JSON). `full_report` still lists them."""
    folder = tmp_path / "handbook"
    for n in range(158):
        write(folder / f"chapter-{n // 20:02}" / f"section-{n:03}-backup-and-restore.md", f"# S{n}\n\nPage {n}.\n")
    engine.index_paths("noop", [folder])
    again = engine.index_paths("noop", [folder], sync=True)
    assert again.files["skipped"] == 158 and again.documents_unchanged == 158
    assert len(again.model_dump_json().encode()) < NO_OP_REPORT_BYTES, again.model_dump_json()
    full = engine.index_paths("noop", [folder], sync=True, full_report=True)
    assert len(full.skipped) == 158


def test_an_error_for_every_file_failing_is_bounded(engine: CueRag, tmp_path: Path) -> None:
    from cuerag.errors import InputError, NothingIndexed

    (tmp_path / "docs").mkdir()
    for n in range(500):
        (tmp_path / "docs" / f"bad{n:03}.txt").write_bytes(b"caf\xe9")
    with pytest.raises(NothingIndexed) as failed:
        engine.index_paths("all-bad", [tmp_path / "docs"])
    assert len(failed.value.failed) == 500  # all of them for the caller that wants them
    assert len(str(failed.value)) < 4_000 and str(failed.value).endswith("and 490 more files that failed")
    # And as many JSON files that do not parse (passed over, not failed): told in a bounded error too.
    for n in range(500):
        write(tmp_path / "json" / f"bad{n:03}.json", "{ not json")
    with pytest.raises(InputError, match="no indexable files") as left_out:
        engine.index_paths("all-bad", [tmp_path / "json"])
    assert len(str(left_out.value)) < 1_000 and "left out: 500 (" in str(left_out.value)


def test_a_name_over_255_bytes_is_refused_clearly_at_the_command_line_too(tmp_path: Path) -> None:
    """Issue 29, item 8: `Path.exists` raised OSError (ENAMETOOLONG): a traceback, not a refusal."""
    from cuerag.errors import InputError

    name = "n" * 300
    with pytest.raises(InputError, match="File name too long") as refused:
        walk_paths([tmp_path / name / "x.md"])
    assert name not in str(refused.value)
