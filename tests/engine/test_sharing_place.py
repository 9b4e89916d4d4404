"""Where a data directory's socket and key live: a folder only this user can enter, which another
user cannot take first (the shared temporary folder's `cuerag-<uid>` made by someone else, or
left loose, is passed over for one under the user's own cache folder)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cuerag.engine.sharing.place import place_of, runtime_dir
from cuerag.errors import SharingError


@pytest.fixture
def no_runtime_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    tmp, cache = tmp_path / "tmp", tmp_path / "home" / ".cache"
    tmp.mkdir()
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setattr("tempfile.tempdir", None)  # read TMPDIR again
    return tmp, cache


def test_the_temporary_folder_is_made_private_when_free(no_runtime_dir: tuple[Path, Path]) -> None:
    tmp, _ = no_runtime_dir
    folder = runtime_dir()
    assert folder == tmp / f"cuerag-{os.getuid()}"
    assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700


def test_a_folder_another_user_made_first_is_passed_over(no_runtime_dir: tuple[Path, Path]) -> None:
    tmp, cache = no_runtime_dir
    taken = tmp / f"cuerag-{os.getuid()}"
    taken.mkdir()
    taken.chmod(0o777)  # what another user's folder looks like from here: not private
    folder = runtime_dir()
    assert folder == cache / "cuerag-run"
    assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700
    assert Path(place_of(tmp / "data").socket).parent == folder  # every process picks the same one


def test_a_symlink_in_its_place_is_passed_over(no_runtime_dir: tuple[Path, Path]) -> None:
    tmp, cache = no_runtime_dir
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp / f"cuerag-{os.getuid()}").symlink_to(elsewhere)
    assert runtime_dir() == cache / "cuerag-run"


def test_no_private_folder_at_all_is_an_error_saying_where(no_runtime_dir: tuple[Path, Path]) -> None:
    tmp, cache = no_runtime_dir
    for folder in (tmp / f"cuerag-{os.getuid()}", cache / "cuerag-run"):
        folder.mkdir(parents=True)
        folder.chmod(0o755)
    with pytest.raises(SharingError, match="not private folders"):
        runtime_dir()


def test_a_cache_folder_another_user_may_write_to_is_not_trusted(no_runtime_dir: tuple[Path, Path]) -> None:
    """XDG_CACHE_HOME (or a link ~/.cache) in a folder others may write to: our private folder in
    it could be renamed away after the check and theirs put in its place. The sticky /tmp holds."""
    tmp, cache = no_runtime_dir
    taken = tmp / f"cuerag-{os.getuid()}"
    taken.mkdir()
    taken.chmod(0o777)  # passed over, as another user's
    cache.parent.mkdir(parents=True)
    cache.parent.chmod(0o777)  # the folder XDG_CACHE_HOME sits in: anyone may write, not sticky
    with pytest.raises(SharingError, match="not private folders"):
        runtime_dir()
    cache.parent.chmod(0o777 | stat.S_ISVTX)  # sticky, as /tmp: nobody renames what is ours
    assert runtime_dir() == cache / "cuerag-run"


def test_a_link_above_the_folder_is_judged_by_where_it_leads(no_runtime_dir: tuple[Path, Path]) -> None:
    tmp, cache = no_runtime_dir
    (tmp / f"cuerag-{os.getuid()}").mkdir(mode=0o777)
    (tmp / f"cuerag-{os.getuid()}").chmod(0o777)
    shared = tmp / "shared-cache"
    shared.mkdir()
    shared.chmod(0o777)
    cache.parent.mkdir(parents=True)
    cache.symlink_to(shared)  # ~/.cache -> a folder anyone may write to
    with pytest.raises(SharingError):
        runtime_dir()
