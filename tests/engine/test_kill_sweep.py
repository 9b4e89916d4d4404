"""Issue 29, item 1: atomic documents. A run is killed before each of its store writes in turn (a
store that dies at its N-th write and refuses every write after, as a dead process would), for
every batch boundary of an index, a replace and a delete run; after each kill the reopened corpus
serves every document, and every file's set of documents, either whole in its old version or
whole in its new one, and a rerun reaches exactly the state of an uninterrupted run, theme
hierarchy included (issue 32: its writes are among those killed). Then a real
SIGKILL of a `cuerag index` process mid-write, and a rerun that equals a fresh index."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from killing import BATCH, CORPUS, first_version, full_state, note, records, second_version, served, settings

from cuerag.engine.facade import CueRag
from cuerag.models.loading import Models


class Killed(BaseException):
    """The process 'dies' here: not an Exception, so no handler in the engine treats it as an error."""


class DyingStore:
    """The real store, dying before its `fail_at`-th write (upsert or delete) and dead after."""

    def __init__(self, store: Any, fail_at: int) -> None:
        self._store = store
        self._left = fail_at
        self.writes = 0

    def __getattr__(self, attr: str) -> Any:
        real = getattr(self._store, attr)
        if attr not in ("upsert", "delete", "create_collection", "drop_collection"):
            return real

        def write(*args: Any, **kwargs: Any) -> Any:
            if self._left <= 0:
                self._left = 0
                raise Killed(f"killed before write {self.writes}")
            self._left -= 1
            self.writes += 1
            return real(*args, **kwargs)

        return write


Operation = Callable[[CueRag, Path], object]


def index_op(engine: CueRag, folder: Path) -> object:
    return engine.index_paths(CORPUS, [folder], sync=True)


def delete_op(engine: CueRag, folder: Path) -> object:
    # Part of one file's set (two records of nine), and a whole note.
    return engine.delete_documents(CORPUS, ["rec-2", "rec-5", "note1.md"])


Seen = dict[str, dict[str, tuple[str, ...]]]


def sweep(
    models: Models,
    tmp_path: Path,
    prepare: Callable[[Path, Path], None],
    operation: Operation,
    check: Callable[[Seen], None] | None = None,
) -> tuple[int, int]:
    """Kill `operation` before each of its writes in turn, from the state `prepare` makes; returns
    (kill points, documents lost). `check` is shown what a reader is served after each kill."""
    base_data, folder = tmp_path / "base-data", tmp_path / "docs"
    folder.mkdir()
    prepare(base_data, folder)

    def fresh_copy(name: str) -> Path:
        data = tmp_path / name
        if base_data.exists():
            shutil.copytree(base_data, data)
        return data

    engine = CueRag(settings(fresh_copy("before")), models=models)
    before = served(engine)
    engine.close()
    engine = CueRag(settings(fresh_copy("reference")), models=models)
    counting = DyingStore(engine.store, 10**9)
    engine.store = counting  # type: ignore[assignment]
    operation(engine, folder)
    engine.store = counting._store
    writes = counting.writes
    after, reference = served(engine), full_state(engine)
    engine.close()
    assert reference["left"] == {"chunks": 0, "units": 0, "entities": 0, "themes": 0}
    assert writes > 2, writes  # several batches

    lost, torn, differ = 0, [], []
    for fail_at in range(writes):
        data = fresh_copy(f"kill-{fail_at}")
        engine = CueRag(settings(data), models=models)
        engine.store = DyingStore(engine.store, fail_at)  # type: ignore[assignment]
        with pytest.raises(Killed):
            operation(engine, folder)
        engine.store = engine.store._store  # type: ignore[attr-defined]
        engine.close()
        reopened = CueRag(settings(data), models=models)
        seen = served(reopened)
        if check is not None:
            check(seen)
        for file in before.keys() | after.keys() | seen.keys():
            now = seen.get(file, {})
            # A file's documents are its old set or its new set, each document whole.
            if now not in (before.get(file, {}), after.get(file, {})):
                torn.append((fail_at, file))
            kept = before.get(file, {}).keys() & after.get(file, {}).keys()
            lost += len(kept - now.keys())
        operation(reopened, folder)  # the rerun
        if full_state(reopened) != reference:
            differ.append(fail_at)
        reopened.close()
        shutil.rmtree(data)
    print(f"{operation.__name__}: {writes} kill points, {lost} documents lost, torn {torn}, reruns off {differ}")
    assert (torn, differ) == ([], []), (torn, differ)
    return writes, lost


def test_kill_sweep_index(models: Models, tmp_path: Path) -> None:
    """A first index of a folder (three multi-chunk notes and a JSONL of nine records)."""

    def prepare(data: Path, folder: Path) -> None:
        first_version(folder)

    points, lost = sweep(models, tmp_path, prepare, index_op)
    assert lost == 0 and points > 6


def test_kill_sweep_replace(models: Models, tmp_path: Path) -> None:
    """A sync after one section of every note and three records changed: the unchanged sections
    of an edited note keep their old version until the new one is whole."""

    def prepare(data: Path, folder: Path) -> None:
        first_version(folder)
        engine = CueRag(settings(data), models=models)
        engine.index_paths(CORPUS, [folder], sync=True)
        engine.close()
        second_version(folder)

    points, lost = sweep(models, tmp_path, prepare, index_op)
    assert lost == 0 and points > 6


def test_kill_sweep_delete(models: Models, tmp_path: Path) -> None:
    def prepare(data: Path, folder: Path) -> None:
        first_version(folder)
        engine = CueRag(settings(data), models=models)
        engine.index_paths(CORPUS, [folder], sync=True)
        engine.close()

    points, lost = sweep(models, tmp_path, prepare, delete_op)
    assert lost == 0 and points > 6


def test_kill_sweep_sync_of_a_removed_file(models: Models, tmp_path: Path) -> None:
    def prepare(data: Path, folder: Path) -> None:
        first_version(folder)
        engine = CueRag(settings(data), models=models)
        engine.index_paths(CORPUS, [folder], sync=True)
        engine.close()
        (folder / "records.jsonl").unlink()

    points, lost = sweep(models, tmp_path, prepare, index_op)
    assert lost == 0 and points > 2


def test_kill_sweep_of_a_moved_and_edited_folder(models: Models, tmp_path: Path) -> None:
    """A sync after a folder was moved (within the synced root) and one of its notes edited. The
    moved files are new paths, so new documents: their sets are written first, and the old paths'
    documents are deleted only once all of them are complete (cuerag.engine.indexing). A run killed
    in between serves both sets, each whole: a moved document is then found under its old and its
    new path, never under neither, and never half of either; the next sync (a rerun, or the first
    sync a restarted watch makes) deletes the old set. Deleting first would instead leave the moved
    documents unfound until the rerun, which is the loss this issue forbids."""
    old, new = "old", "new"

    def prepare(data: Path, folder: Path) -> None:
        (folder / old).mkdir()
        first_version(folder / old)
        engine = CueRag(settings(data), models=models)
        engine.index_paths(CORPUS, [folder], sync=True)
        engine.close()
        (folder / old).rename(folder / new)
        (folder / new / "note1.md").write_text(note(1, edited=True))

    both = 0

    def check(seen: Seen) -> None:
        nonlocal both
        names = ("note0.md", "note1.md", "note2.md", "records.jsonl")
        where = {name: {part for part in (old, new) if f"{part}/{name}" in seen} for name in names}
        assert all(where.values()), where  # every moved file is served under one path or both
        both += any(len(parts) == 2 for parts in where.values())

    points, lost = sweep(models, tmp_path, prepare, index_op, check)
    print(f"moved and edited: {points} kill points, {both} serving some moved files under both paths")
    assert lost == 0 and points > 6


def test_an_unchanged_file_is_one_whose_documents_are_complete(models: Models, tmp_path: Path) -> None:
    """The issue's reproduction: a kill right after the first chunk batch of a JSONL file; the rerun
    said "1 unchanged" and kept 256 of 300 documents for good."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "records.jsonl").write_text(records(range(30)))
    data = tmp_path / "data"
    engine = CueRag(settings(data), models=models)
    chunk_writes = 0
    real = engine.store

    class KillAfterFirstChunkBatch(DyingStore):
        def __getattr__(self, attr: str) -> Any:
            method = super().__getattr__(attr)
            if attr != "upsert":
                return method

            def upsert(name: str, points: Any) -> Any:
                nonlocal chunk_writes
                if name.endswith("--chunks"):
                    chunk_writes += 1
                    if chunk_writes == 2:
                        raise Killed("after the first chunk batch")
                return method(name, points)

            return upsert

    engine.store = KillAfterFirstChunkBatch(real, 10**9)  # type: ignore[assignment]
    with pytest.raises(Killed):
        engine.index_paths(CORPUS, [folder])
    engine.store = real
    engine.close()
    engine = CueRag(settings(data), models=models)
    assert served(engine) == {}  # none of the file's documents until all of them are stored
    report = engine.index_paths(CORPUS, [folder], sync=True)
    assert (len(report.added), report.files["skipped"]) == (1, 0)  # read again, not "unchanged"
    assert len(served(engine)["records.jsonl"]) == 30
    engine.close()


_KILLED_CLI = """
import os, signal, sys
from cuerag.store import edge_store
real = edge_store.EdgeStore.upsert
chunk_writes = 0
def upsert(self, name, points):
    global chunk_writes
    if name.endswith("--chunks"):
        chunk_writes += 1
        if chunk_writes == int(os.environ["KILL_AT_CHUNK_WRITE"]):
            os.kill(os.getpid(), signal.SIGKILL)  # mid-write: earlier chunk batches are stored
    return real(self, name, points)
edge_store.EdgeStore.upsert = upsert
from cuerag.cli.app import main
sys.argv = ["cuerag", *sys.argv[1:]]
main()
"""


def test_sigkill_of_cuerag_index_mid_write_then_rerun_equals_a_fresh_index(models: Models, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    first_version(folder)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUERAG_")}
    env |= {"CUERAG_WRITE_BATCH": str(BATCH), "CUERAG_CHUNK_TOKENS": "48", "CUERAG_CHUNK_OVERLAP": "0"}
    env |= {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    killed, fresh = tmp_path / "killed", tmp_path / "fresh"
    args = ["index", str(folder), "--corpus", CORPUS, "--sync"]
    repo = Path(__file__).parents[2]  # the checkout: its cuerag, not an installed one
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_CLI, *args],
        env={**env, "CUERAG_DATA_DIR": str(killed), "KILL_AT_CHUNK_WRITE": "3"},
        cwd=repo,
        capture_output=True,
        timeout=600,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    engine = CueRag(settings(killed), models=models)
    partial = served(engine)
    assert all(len(docs) == {"records.jsonl": 9}.get(file, 1) for file, docs in partial.items()), partial
    engine.close()
    for data in (killed, fresh):
        rerun = subprocess.run(
            [sys.executable, "-m", "cuerag", *args],
            env={**env, "CUERAG_DATA_DIR": str(data)},
            cwd=repo,
            capture_output=True,
            timeout=600,
        )
        assert rerun.returncode == 0, rerun.stderr[-2000:]
    states = []
    for data in (killed, fresh):
        engine = CueRag(settings(data), models=models)
        states.append(full_state(engine))
        engine.close()
    assert states[0] == states[1] and states[0]
