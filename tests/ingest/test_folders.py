"""Folders as corpora: a file's identity is its path, sync (added / changed / removed / skipped),
ignore rules, bad files that do not stop a folder, --strict, and watching a folder."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import assert_graphs_equal, point_counts
from mcp import Client
from typer.testing import CliRunner

from cuerag.cli.app import app
from cuerag.config import Settings
from cuerag.engine.facade import CueRag
from cuerag.engine.watch import watch_folder
from cuerag.errors import InputError
from cuerag.graph.snapshot import load_graph
from cuerag.index.report import IndexReport
from cuerag.ingest.artefacts import NOT_JSON
from cuerag.ingest.documents import make_document
from cuerag.ingest.folders import WalkRules, walk_paths
from cuerag.models.loading import Models
from server.app import build_server
from server.config import ServerSettings

FORMATS = Path(__file__).parent.parent / "data" / "formats"
LUMEN_45 = "# Lumen X3\n\nThe Lumen X3 camera has a full-frame sensor with 45 megapixels.\n"
LUMEN_50 = "# Lumen X3\n\nThe Lumen X3 camera has a full-frame sensor with 50 megapixels.\n"
ORBIT = "# Orbit Z\n\nThe Orbit Z is a compact camera made in Osaka. It weighs 300 grams.\n"


# Vectors of texts embedded in other batches than a fresh index's differ by bfloat16 rounding.
BATCH_ROUNDING = 5e-3


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def paths_of(outcomes: list) -> list[str]:
    return sorted(Path(o.path).name for o in outcomes)


def texts(engine: CueRag, corpus: str) -> list[str]:
    return engine.graph(corpus).chunk_texts


# ---- identity by path ---------------------------------------------------------------------------


def test_an_edited_file_replaces_its_earlier_version(engine: CueRag, tmp_path: Path) -> None:
    """The issue's case: 45 -> 50 megapixels in one file of an indexed folder, indexed again."""
    folder = tmp_path / "cameras"
    lumen = write(folder / "lumen-x3.md", LUMEN_45)
    write(folder / "orbit-z.md", ORBIT)
    engine.index_paths("cams", [folder])

    lumen.write_text(LUMEN_50)
    report = engine.index_paths("cams", [folder], full_report=True)  # lists the unchanged file too
    assert (report.documents_added, report.documents_replaced, report.documents_unchanged) == (0, 1, 1)
    assert paths_of(report.changed) == ["lumen-x3.md"] and paths_of(report.skipped) == ["orbit-z.md"]
    assert report.chunks_removed == 1
    assert engine.info("cams").documents == 2
    assert not any("45 megapixels" in t for t in texts(engine, "cams"))  # the stale chunk is gone
    top = engine.query("cams", "How many megapixels does the Lumen X3 sensor have?").chunks[0]
    assert "50 megapixels" in top.text and top.doc_id == "lumen-x3.md"
    # Named as a file, the same file has the same identity (its root is its own folder).
    assert engine.index_paths("cams", [lumen], full_report=True).skipped[0].reason == "unchanged"


# ---- sync ---------------------------------------------------------------------------------------


def make_vault(root: Path) -> None:
    write(root / "lumen-x3.md", LUMEN_45)
    write(root / "orbit-z.md", ORBIT)
    write(root / "guide" / "batteries.txt", "Camera batteries last longer when kept warm in winter.\n")
    records = [
        {"id": "tripod", "title": "Tripod", "text": "A tripod holds the camera still for long exposures."},
        {"id": "strap", "title": "Strap", "text": "A neck strap made of leather carries the camera."},
    ]
    write(root / "gear.json", json.dumps(records))


def test_sync_follows_the_folder_and_ends_equal_to_a_fresh_index(make_engine, tmp_path: Path) -> None:
    engine = make_engine()
    vault = tmp_path / "vault"
    make_vault(vault)
    first = engine.index_paths("vault", [vault], sync=True)
    assert paths_of(first.added) == ["batteries.txt", "gear.json", "lumen-x3.md", "orbit-z.md"]
    assert first.documents_added == 5

    again = engine.index_paths("vault", [vault], sync=True)  # nothing changed: every file skipped unread
    assert again.files["skipped"] == 4 and not (again.added or again.changed or again.removed or again.failed)
    assert (again.documents_added, again.documents_unchanged, again.chunks_added) == (0, 5, 0)

    (vault / "lumen-x3.md").write_text(LUMEN_50)  # changed
    (vault / "orbit-z.md").unlink()  # removed
    write(vault / "guide" / "lenses.md", "# Lenses\n\nA prime lens has one focal length.\n")  # added
    gear = json.loads((vault / "gear.json").read_text())
    (vault / "gear.json").write_text(json.dumps(gear[:1]))  # one record gone, one kept as it was
    report = engine.index_paths("vault", [vault], sync=True, full_report=True)
    assert paths_of(report.added) == ["lenses.md"]
    assert paths_of(report.changed) == ["gear.json", "lumen-x3.md"]
    assert paths_of(report.removed) == ["orbit-z.md"]
    assert paths_of(report.skipped) == ["batteries.txt"]
    assert report.documents_removed == 2  # orbit-z.md, and the strap record
    # Unchanged: batteries.txt (skipped unread) and the tripod record of the changed gear.json.
    assert (report.documents_added, report.documents_replaced, report.documents_unchanged) == (1, 1, 2)
    assert sorted(set(engine.graph("vault").chunk_docs)) == [
        "guide/batteries.txt",
        "guide/lenses.md",
        "lumen-x3.md",
        "tripod",
    ]

    fresh = make_engine()
    fresh.index_paths("vault", [vault])
    assert_graphs_equal(engine.graph("vault"), fresh.graph("vault"), atol=BATCH_ROUNDING)
    # The snapshot is what the store holds, and the store holds nothing else.
    assert_graphs_equal(engine.graph("vault"), load_graph(engine.store, "vault", dim=engine.models.embedder.dim))
    assert point_counts(engine, "vault") == point_counts(fresh, "vault")
    # The JSON file's unchanged record now carries the new file hash: the next sync skips the file.
    assert engine.index_paths("vault", [vault], sync=True).files["skipped"] == 4


def test_sync_removes_only_what_came_from_the_synced_folder(engine: CueRag, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    write(one / "a.md", "# Alpha\n\nAlpha is the first letter.\n")
    write(two / "b.md", "# Beta\n\nBeta is the second letter.\n")
    engine.index_paths("mixed", [one])
    engine.index_paths("mixed", [two])
    engine.index_documents("mixed", [make_document("Gamma", "Gamma is the third letter.", "gamma")])
    (one / "a.md").unlink()
    write(one / "c.md", "# Gamma note\n\nGamma follows beta.\n")
    report = engine.index_paths("mixed", [one], sync=True)
    assert paths_of(report.removed) == ["a.md"] and paths_of(report.added) == ["c.md"]
    assert sorted(set(engine.graph("mixed").chunk_docs)) == ["b.md", "c.md", "gamma"]


def test_sync_after_a_crash_between_writing_and_deleting_reaches_the_same_state(
    make_engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine()
    vault = tmp_path / "vault"
    make_vault(vault)
    engine.index_paths("vault", [vault], sync=True)
    (vault / "lumen-x3.md").write_text(LUMEN_50)
    (vault / "orbit-z.md").unlink()

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # stands for a kill after the new chunks landed, before the deletion

    monkeypatch.setattr(engine._runs, "_delete_locked", killed)  # the index runs behind the facade
    with pytest.raises(KeyboardInterrupt):
        engine.index_paths("vault", [vault], sync=True)
    monkeypatch.undo()
    rerun = engine.index_paths("vault", [vault], sync=True, full_report=True)
    assert paths_of(rerun.removed) == ["orbit-z.md"] and paths_of(rerun.skipped) == [
        "batteries.txt",
        "gear.json",
        "lumen-x3.md",
    ]
    fresh = make_engine()
    fresh.index_paths("vault", [vault])
    assert_graphs_equal(engine.graph("vault"), fresh.graph("vault"), atol=BATCH_ROUNDING)


def test_a_moved_folder_is_repointed_without_embedding_again(engine: CueRag, tmp_path: Path) -> None:
    make_vault(tmp_path / "before")
    engine.index_paths("moved", [tmp_path / "before"], sync=True)
    graph = engine.graph("moved")
    (tmp_path / "before").rename(tmp_path / "after")
    report = engine.index_paths("moved", [tmp_path / "after"], sync=True)
    assert len(report.added) == 4 and report.chunks_added == 0 and report.documents_unchanged == 5
    assert engine.graph("moved").chunk_ids == graph.chunk_ids
    # The corpus now knows the folder by its new place: a file deleted there is removed by a sync.
    (tmp_path / "after" / "orbit-z.md").unlink()
    assert paths_of(engine.index_paths("moved", [tmp_path / "after"], sync=True).removed) == ["orbit-z.md"]


# ---- ignore rules -------------------------------------------------------------------------------


def test_walk_skips_dot_folders_gitignored_and_excluded_files(tmp_path: Path) -> None:
    write(tmp_path / ".obsidian" / "app.json", json.dumps({"title": "settings", "text": "theme dark"}))
    write(tmp_path / ".hidden.md", "hidden")
    write(tmp_path / ".gitignore", "drafts/\n*.tmp.md\n")
    write(tmp_path / "drafts" / "plan.md", "draft")
    write(tmp_path / "notes" / "a.md", "a")
    write(tmp_path / "notes" / "scratch.tmp.md", "scratch")
    write(tmp_path / "notes" / ".gitignore", "private.md\n")
    write(tmp_path / "notes" / "private.md", "private")
    write(tmp_path / "private.md", "not ignored here: the rule sits in notes/")
    write(tmp_path / "logs" / "b.txt", "b")
    write(tmp_path / "image.png", "not text")

    def sources(rules: WalkRules | None = None) -> list[str]:
        return [f.source for f in walk_paths([tmp_path], rules=rules).files]

    assert sources() == ["logs/b.txt", "notes/a.md", "private.md"]
    assert sources(WalkRules(exclude=("logs/",))) == ["notes/a.md", "private.md"]
    assert sources(WalkRules(include=("*.md",))) == ["notes/a.md", "private.md"]
    assert sources(WalkRules(include=("notes/**",))) == ["notes/a.md"]
    assert sources(WalkRules(gitignore=False)) == [
        "drafts/plan.md",
        "logs/b.txt",
        "notes/a.md",
        "notes/private.md",
        "notes/scratch.tmp.md",
        "private.md",
    ]
    hidden = sources(WalkRules(hidden=True))
    assert ".obsidian/app.json" in hidden and ".hidden.md" in hidden and "drafts/plan.md" not in hidden


def test_sync_removes_files_an_ignore_rule_now_leaves_out(engine: CueRag, tmp_path: Path) -> None:
    write(tmp_path / "keep.md", "# Keep\n\nKeep this note.\n")
    write(tmp_path / "drafts" / "plan.md", "# Plan\n\nA draft plan.\n")
    engine.index_paths("rules", [tmp_path], sync=True)
    write(tmp_path / ".gitignore", "drafts/\n")
    report = engine.index_paths("rules", [tmp_path], sync=True)
    assert [r.path.endswith("drafts/plan.md") for r in report.removed] == [True]
    assert set(engine.graph("rules").chunk_docs) == {"keep.md"}


# ---- bad files ----------------------------------------------------------------------------------


def bad_folder(root: Path) -> None:
    write(root / "good.md", "# Good\n\nBergen has a fish market.\n")
    write(root / "broken.json", '[{"title": "Broken", "text": "cut')
    (root / "latin1.txt").write_bytes("Café au lait, très bien.".encode("latin-1"))
    (root / "loop.md").symlink_to(root / "loop.md")
    (root / "dangling.md").symlink_to(root / "nowhere.md")
    os.mkfifo(root / "pipe.md")


def test_bad_files_are_reported_and_the_rest_indexed(engine: CueRag, tmp_path: Path, caplog) -> None:
    bad_folder(tmp_path)
    with caplog.at_level("WARNING"):
        report = engine.index_paths("bad", [tmp_path])
    reasons = {Path(f.path).name: f.reason for f in report.failed}
    assert reasons == {
        "dangling.md": "broken symbolic link (its target does not exist)",
        "latin1.txt": "file is not valid UTF-8 (byte 3); convert it to UTF-8 first",
        "loop.md": "symlink loop",
        "pipe.md": "not a regular file",
    }
    # JSON in a walked folder that does not parse may be any program's file: passed over, and told.
    assert [(e.reason, e.count, e.paths) for e in report.left_out] == [(NOT_JSON, 1, ["broken.json"])]
    assert paths_of(report.added) == ["good.md"]
    assert set(engine.graph("bad").chunk_docs) == {"good.md"}
    assert sum("loop.md" in r.message and "symlink loop" in r.message for r in caplog.records) == 1


def test_strict_stops_at_the_first_bad_file_and_writes_nothing(engine: CueRag, tmp_path: Path) -> None:
    bad_folder(tmp_path / "in")
    with pytest.raises(InputError, match=r"(dangling|latin1|loop|pipe)\.(md|txt): .*nothing was written"):
        engine.index_paths("strict", [tmp_path / "in"], strict=True)
    assert engine.corpora() == [] and engine.store.list_collections() == []
    # An existing corpus is left as it was.
    engine.index_paths("strict", [write(tmp_path / "other" / "x.md", "# X\n\nOslo is a city.\n")])
    counts = point_counts(engine, "strict")
    with pytest.raises(InputError, match="nothing was written"):
        engine.index_paths("strict", [tmp_path / "in"], strict=True, sync=True)
    assert point_counts(engine, "strict") == counts


def test_a_folder_of_only_bad_files_is_an_error(engine: CueRag, tmp_path: Path) -> None:
    (tmp_path / "latin1.txt").write_bytes("Café".encode("latin-1"))
    with pytest.raises(InputError, match=r"nothing to index: .*latin1\.txt: file is not valid UTF-8"):
        engine.index_paths("none", [tmp_path])
    assert engine.corpora() == []


def test_a_named_file_in_an_unsupported_format_is_refused(engine: CueRag, tmp_path: Path) -> None:
    passwd = write(tmp_path / "passwd", "root:x:0:0:root:/root:/bin/bash\n")
    with pytest.raises(InputError, match="unsupported format '\\(none\\)'"):
        engine.index_paths("named", [passwd])
    good = write(tmp_path / "good.md", "# Good\n\nBergen has a fish market.\n")
    report = engine.index_paths("named", [passwd, good])
    assert [(Path(f.path).name, f.reason.split(";")[0]) for f in report.failed] == [
        ("passwd", "unsupported format '(none)'")
    ]
    assert set(engine.graph("named").chunk_docs) == {"good.md"}


# ---- CLI ----------------------------------------------------------------------------------------


def test_cli_sync_and_strict(tmp_path: Path) -> None:
    runner = CliRunner()
    data = ["--data-dir", str(tmp_path / "data")]
    vault = tmp_path / "vault"
    make_vault(vault)
    result = runner.invoke(app, [*data, "index", str(vault), "--corpus", "v", "--sync", "--json"])
    assert result.exit_code == 0, result.output
    (vault / "orbit-z.md").unlink()
    (vault / "broken.md").write_bytes("Café".encode("latin-1"))
    write(vault / "broken.json", "{")
    result = runner.invoke(app, [*data, "index", str(vault), "--corpus", "v", "--sync"])
    assert result.exit_code == 0, result.output
    shown = " ".join(result.output.split())  # the console wraps long lines
    assert f"removed {vault.resolve()}/orbit-z.md" in shown
    assert f"failed {vault}/broken.md: file is not valid UTF-8" in shown
    assert f"left out: 1 ({NOT_JSON}): broken.json" in shown
    assert "files: 0 added, 0 changed, 1 removed, 3 unchanged, 1 failed" in shown
    assert "0 documents added" in shown
    write(vault / "new.md", "# New\n\nA new note.\n")
    result = runner.invoke(app, [*data, "index", str(vault), "--corpus", "v"])
    assert "1 document added" in " ".join(result.output.split()), result.output  # not "1 documents"
    result = runner.invoke(app, [*data, "index", str(vault), "--corpus", "v", "--sync", "--strict"])
    assert result.exit_code == 1 and "nothing was written" in result.output


# ---- watch --------------------------------------------------------------------------------------


@contextlib.contextmanager
def watching(engine: CueRag, vault: Path, **more: object) -> Iterator[queue.Queue[IndexReport]]:
    """A watch of `vault` into corpus "watched" in a thread, its reports in a queue; stopped after."""
    reports: queue.Queue[IndexReport] = queue.Queue()
    stop = threading.Event()
    watcher = threading.Thread(
        target=watch_folder,
        args=(engine, "watched", vault),
        kwargs={"on_report": reports.put, "stop": stop, "debounce_ms": 100, **more},
    )
    watcher.start()
    try:
        yield reports
    finally:
        stop.set()
        watcher.join(timeout=60)
    assert not watcher.is_alive()


def test_watch_picks_up_a_change(engine: CueRag, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    lumen = write(vault / "lumen-x3.md", LUMEN_45)
    with watching(engine, vault) as reports:
        first = reports.get(timeout=120)  # the first sync runs once the watcher is in place
        assert paths_of(first.added) == ["lumen-x3.md"]
        write(vault / ".obsidian" / "workspace.json", "{}")  # a dot-folder change wakes nothing
        lumen.write_text(LUMEN_50)
        report = reports.get(timeout=120)
        while not report.changed:  # an editor may write in more than one step
            report = reports.get(timeout=120)
        assert paths_of(report.changed) == ["lumen-x3.md"]
        assert any("50 megapixels" in t for t in texts(engine, "watched"))
        assert not any("45 megapixels" in t for t in texts(engine, "watched"))


def test_a_watch_warns_of_a_bad_file_once_until_its_reason_changes(
    engine: CueRag, tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    vault = tmp_path / "vault"
    write(vault / "lumen-x3.md", LUMEN_45)
    write(vault / "broken.pdf", "%PDF-1.4 cut short")
    with caplog.at_level("WARNING", logger="cuerag.index.sync"), watching(engine, vault) as reports:
        first = reports.get(timeout=120)
        write(vault / "second.md", "# Second\n\nA second note about the Lumen X3.\n")
        second = reports.get(timeout=120)
        while "second.md" not in paths_of(second.added):
            second = reports.get(timeout=120)
        (vault / "broken.pdf").write_bytes((FORMATS / "scanned.pdf").read_bytes())  # a new reason: told again
        third = reports.get(timeout=120)
        while paths_of(third.failed) and third.failed[0].reason == first.failed[0].reason:
            third = reports.get(timeout=120)
    # Every report still lists the failure: it is the folder's state.
    assert paths_of(first.failed) == paths_of(second.failed) == paths_of(third.failed) == ["broken.pdf"]
    warned = [r.getMessage() for r in caplog.records if "broken.pdf" in r.getMessage()]
    assert len(warned) == 2, warned  # once at the first sync, once when its reason changed

    from cuerag.cli.render import print_report

    capsys.readouterr()
    print_report(second, told={f.path: f.reason for f in first.failed})
    shown = capsys.readouterr().out
    assert "not a readable PDF" not in shown and "again, for the reasons given when they first failed" in shown
    assert "broken.pdf" in shown  # named, so the user need not scroll back to find which
    print_report(third, told={f.path: f.reason for f in second.failed})
    assert "broken.pdf" in capsys.readouterr().out


def test_a_watch_of_a_folder_where_every_file_fails_warns_once(
    engine: CueRag, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing to index is an error, not a report: the watch still knows the failures it names."""
    vault = tmp_path / "vault"
    write(vault / "broken.pdf", "%PDF-1.4 cut short")
    errors: queue.Queue[Exception] = queue.Queue()
    with caplog.at_level("WARNING"), watching(engine, vault, on_error=errors.put):
        errors.get(timeout=120)
        for n in range(2):  # the same bad bytes written again: the same reason
            write(vault / "broken.pdf", "%PDF-1.4 cut short" + " " * (n + 1))
            errors.get(timeout=120)
    warned = [r.getMessage() for r in caplog.records if "broken.pdf" in r.getMessage()]
    assert len(warned) == 2, warned  # the file's skip and the sync's failure, each once


# ---- the MCP tool -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_mcp_index_corpus_sync_strict_and_file_lists(models: Models, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    make_vault(vault)
    server = build_server(
        Settings(data_dir=tmp_path / "data"),
        ServerSettings(allowed_roots=[vault]),
        engine_factory=lambda s: CueRag(s, models=models),
    )

    async def index(**args: object) -> dict:
        result = await client.call_tool("index_corpus", {"corpus": "v", "paths": [str(vault)], **args})
        assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
        assert result.structured_content is not None
        return result.structured_content

    def names(files: list[dict]) -> list[str]:
        return sorted(Path(f["path"]).name for f in files)

    async with Client(server) as client:
        first = await index(sync=True)
        assert names(first["added"]) == ["batteries.txt", "gear.json", "lumen-x3.md", "orbit-z.md"]
        (vault / "orbit-z.md").unlink()
        (vault / "lumen-x3.md").write_text(LUMEN_50)
        (vault / "broken.md").write_bytes("Café".encode("latin-1"))
        report = await index(sync=True, full_report=True)  # unchanged files listed, not only counted
        assert names(report["changed"]) == ["lumen-x3.md"] and names(report["removed"]) == ["orbit-z.md"]
        assert names(report["skipped"]) == ["batteries.txt", "gear.json"]
        assert [(Path(f["path"]).name, f["reason"][:19]) for f in report["failed"]] == [
            ("broken.md", "file is not valid U")
        ]
        assert report["documents_removed"] == 1 and report["totals"]["documents"] == 4

        strict = await client.call_tool("index_corpus", {"corpus": "v", "paths": [str(vault)], "strict": True})
        assert strict.is_error and "nothing was written" in strict.content[0].text  # type: ignore[union-attr]

        # A file named explicitly in a format the reader does not know is refused, not read as text.
        passwd = write(vault / "passwd", "root:x:0:0:root:/root:/bin/bash\n")
        named = await client.call_tool("index_corpus", {"corpus": "v", "paths": [str(passwd)]})
        assert named.is_error and "unsupported format '(none)'" in named.content[0].text  # type: ignore[union-attr]

        narrowed = await index(sync=True, exclude=["guide/", "broken.md"])
        assert names(narrowed["removed"]) == ["batteries.txt"] and not narrowed["failed"]
        hits = await client.call_tool("dense_search", {"corpus": "v", "query": "How many megapixels?"})
        assert {h["doc_id"] for h in hits.structured_content["chunks"]} == {  # type: ignore[index]
            "lumen-x3.md",
            "tripod",
            "strap",
        }


def test_a_file_swapped_for_a_fifo_after_the_walk_is_reported_not_waited_on(tmp_path: Path) -> None:
    """The sync plan reads each file once through the checked descriptor; a hash taken by opening
    the name again would block forever on a FIFO put there after the walk."""
    from cuerag.index.sync import plan_sync

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nAda wrote notes.\n")
    (folder / "b.md").write_text("# B\n\nBob read them.\n")
    walk = walk_paths([folder])
    (folder / "b.md").unlink()
    os.mkfifo(folder / "b.md")
    done: queue.Queue[object] = queue.Queue()
    worker = threading.Thread(target=lambda: done.put(plan_sync(walk, None, sync=False, strict=False)), daemon=True)
    worker.start()
    worker.join(timeout=30)
    if worker.is_alive():  # unblock the reader so the test process can end
        fd = os.open(folder / "b.md", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail("the sync plan blocked on a FIFO")
    plan = done.get()
    assert [d.id for d in plan.documents] == ["a.md"]  # type: ignore[attr-defined]
    assert [(f.path.endswith("b.md"), "not a regular file" in (f.reason or "")) for f in plan.failed] == [(True, True)]  # type: ignore[attr-defined]
