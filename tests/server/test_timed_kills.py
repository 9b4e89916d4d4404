"""Issue 29, item 1, with real processes: the MCP server (stdio) killed by SIGKILL while it indexes
a sync, and `cuerag watch` killed while it syncs an edit. After each kill, every file's documents
are its old set or its new one, each document whole and none lost; a rerun then equals an
uninterrupted run (documents, chunk texts, versions, nothing left over). The instants here are a
few; benchmarks/timed_kills.py sweeps many more and prints its figures (docs/robustness.md)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from killing import (
    CORPUS,
    Kill,
    first_version,
    full_state,
    kill_server_mid_index,
    kill_watch_mid_update,
    second_version,
    served,
    settings,
    state_at,
)

from cuerag.engine.facade import CueRag
from cuerag.models.loading import Models


class Versions:
    """A folder indexed in its first version (kept as a data dir to copy), edited to its second,
    and what an uninterrupted sync of the edit serves and stores."""

    def __init__(self, models: Models, tmp_path: Path) -> None:
        self.models, self.tmp = models, tmp_path
        self.folder, self.base = tmp_path / "docs", tmp_path / "base"
        self.folder.mkdir()
        first_version(self.folder)
        self.before = self._sync(self.base)[0]
        second_version(self.folder)
        reference = tmp_path / "reference"
        shutil.copytree(self.base, reference)
        self.after, self.reference = self._sync(reference)
        first_version(self.folder)  # the watch makes the edit itself; the server is given it below

    def _sync(self, data: Path) -> tuple[dict[str, Any], dict[str, Any]]:
        engine = CueRag(settings(data), models=self.models)
        try:
            engine.index_paths(CORPUS, [self.folder], sync=True)
            return served(engine), full_state(engine)
        finally:
            engine.close()

    def copy(self, name: str) -> Path:
        data = self.tmp / name
        shutil.copytree(self.base, data)
        return data

    def check_killed_then_rerun(self, data: Path, kill: Kill) -> None:
        seen, _ = state_at(data, self.models)
        for file in self.before.keys() | self.after.keys() | seen.keys():
            now = seen.get(file, {})
            assert now in (self.before.get(file), self.after.get(file)), (kill, file, now)
        rerun, state = self._sync(data)
        assert rerun == self.after, kill
        assert state == self.reference, kill


def test_sigkill_of_the_stdio_server_mid_index_then_rerun(models: Models, tmp_path: Path) -> None:
    versions = Versions(models, tmp_path)
    second_version(versions.folder)
    kills = []
    for at in (1, 4):  # after the first chunk batches land, and further on
        data = versions.copy(f"server-{at}")
        kill = kill_server_mid_index(data, versions.folder, at_progress=at)
        kills.append(kill)
        versions.check_killed_then_rerun(data, kill)
    assert any(not k.finished for k in kills), kills  # killed mid-run at least once


def test_sigkill_of_cuerag_watch_mid_update_then_rerun(models: Models, tmp_path: Path) -> None:
    versions = Versions(models, tmp_path)
    for delay in (0.3, 1.5):
        data = versions.copy(f"watch-{delay}")
        first_version(versions.folder)
        kill = kill_watch_mid_update(data, versions.folder, after_s=delay)
        versions.check_killed_then_rerun(data, kill)
