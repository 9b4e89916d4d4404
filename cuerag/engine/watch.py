"""`cuerag watch`: keep a corpus in sync with a folder while it runs.

One sync at the start, then one after each burst of changes (watchfiles gathers the changes of a
burst, waiting `debounce_ms` of quiet, so saving ten files is one sync). Each sync is the same
`index_paths(..., sync=True)` as `cuerag index --sync`: unchanged files cost a hash, so a sync
after a one-file edit costs about that file. Changes inside dot-folders or excluded paths (an
editor's `.obsidian/workspace.json`, `.git/`) do not wake it, nor do writes to the data directory
when it lies inside the watched folder.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import watchfiles

from cuerag.engine.surface import Engine
from cuerag.errors import Cancelled, CueRagError, NothingIndexed
from cuerag.index.report import IndexReport, Progress
from cuerag.index.report_bounds import cut_lists
from cuerag.ingest.folders import FileCheck, WalkRules, is_ignored
from cuerag.ingest.tree import walk_tree

log = logging.getLogger(__name__)


def watch_folder(
    engine: Engine,
    corpus: str,
    folder: Path,
    *,
    rules: WalkRules | None = None,
    on_report: Callable[[IndexReport], None],
    on_error: Callable[[CueRagError], None] | None = None,
    stop: threading.Event | None = None,
    debounce_ms: int = 500,
    check: FileCheck | None = None,
    progress: Progress | None = None,
    sync: bool = True,
) -> None:
    """Sync `folder` into `corpus` now and after every change until `stop` is set (or Ctrl-C,
    which watchfiles turns into a clean return). A sync that fails (a file vanished mid-read, the
    corpus busy) is logged, given to `on_error`, and retried at the next change; the watch goes on.
    Setting `stop` also stops a sync under way at its next step (see cuerag.index.pipeline: a rerun
    completes it). `check` is asked about every file a sync reads (the server's allowed roots).
    `sync=False`: new and edited files are indexed, deleted ones keep their documents."""
    rules = rules or WalkRules()
    root = folder.expanduser().resolve()
    data_dir = engine.settings.data_dir.expanduser().resolve()

    def relevant(_change: watchfiles.Change, raw: str) -> bool:
        path = Path(raw)
        if path.is_relative_to(data_dir) or not path.is_relative_to(root):
            return False
        return not is_ignored(PurePosixPath(path.relative_to(root).as_posix()), rules)

    should_stop = stop.is_set if stop is not None else None
    # The failures of the last sync: a file that fails again for the same reason is not warned of
    # at every sync (the report still lists it, as the state of the folder).
    known_failures: dict[str, str] = {}
    last_error = ""  # a sync that fails as the last one did is not warned of again either

    def sync_once() -> None:
        nonlocal known_failures, last_error
        try:
            report = engine.index_paths(
                corpus,
                [root],
                sync=sync,
                rules=rules,
                check=check,
                progress=progress,
                should_stop=should_stop,
                known_failures=known_failures,
                full_report=True,  # every failure, to tell a repeat from news; the listener gets the bounded report
            )
        except Cancelled:
            return  # stopped: the watch ends at the next yield
        except CueRagError as exc:
            level = logging.DEBUG if str(exc) == last_error else logging.WARNING
            log.log(level, "sync of %s into %s failed: %s", root, corpus, exc)
            last_error = str(exc)
            if isinstance(exc, NothingIndexed):  # every file failed: known, as a report's would be
                known_failures = dict(exc.failed)
            if on_error is not None:
                on_error(exc)
            return
        known_failures = {f.path: f.reason for f in [*report.failed, *report.warnings]}
        last_error = ""
        on_report(cut_lists(report))

    synced = False
    # Each real folder of the tree is watched on its own, not the root recursively: the native
    # watcher follows symlinks to folders, so one link to / would set watches on the whole disk
    # (and use up the user's inotify watches); the walk never follows them either. A folder made
    # or removed changes the set, and the watch starts over with the new one.
    while not (stop is not None and stop.is_set()):
        folders = _folders(root, rules, data_dir)
        restart = False
        # The first sync runs at the first (empty) yield, once the watcher is in place: a change
        # made while it runs is then seen, not lost between the sync and the start of the watch.
        for changes in watchfiles.watch(
            *folders,
            watch_filter=relevant,
            debounce=debounce_ms,
            stop_event=stop,
            raise_interrupt=False,
            yield_on_timeout=True,
            rust_timeout=1000,
            recursive=False,
        ):
            if changes or not synced:
                if changes:
                    log.info("%d changes under %s; syncing", len(changes), root)
                sync_once()
                synced = True
            if any(_changes_folders(change, raw, folders) for change, raw in changes):
                # Synced again once the new watcher is in place: what was written in the new
                # folder between this sync and then would otherwise wait for the next change.
                restart, synced = True, False
                break
        if not restart:
            return  # stopped, or Ctrl-C


def _folders(root: Path, rules: WalkRules, data_dir: Path) -> list[Path]:
    """The root and every real folder under it that a change could matter in: no symlinked
    folders, no dot-folders (unless asked for) or excluded ones, not the data directory."""
    found = [root]
    for here, dirs, _ in walk_tree(root):  # a link to a folder is not entered; no recursion limit
        kept = []
        for name in sorted(dirs):
            path = Path(here) / name
            if path.is_symlink() or path.resolve().is_relative_to(data_dir):
                continue
            if is_ignored(PurePosixPath(path.relative_to(root).as_posix()), rules):
                continue
            kept.append(name)
            found.append(path)
        dirs[:] = kept
    return found


def _changes_folders(change: watchfiles.Change, raw: str, folders: list[Path]) -> bool:
    """Whether a change adds or removes a watched folder's kind of thing: a new real folder, or a
    watched one gone."""
    path = Path(raw)
    if change == watchfiles.Change.deleted:
        return path in folders
    return path.is_dir() and not path.is_symlink() and path not in folders
