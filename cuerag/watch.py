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

from cuerag.engine import CueRag
from cuerag.errors import Cancelled, CueRagError, NothingIndexed
from cuerag.folders import FileCheck, WalkRules, is_ignored
from cuerag.index import IndexReport, Progress

log = logging.getLogger(__name__)


def watch_folder(
    engine: CueRag,
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
    Setting `stop` also stops a sync under way at its next step (see cuerag.index: a rerun
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
        known_failures = {f.path: f.reason for f in report.failed}
        last_error = ""
        on_report(report)

    synced = False
    # The first sync runs at the first (empty) yield, once the watcher is in place: a change made
    # while it runs is then seen, not lost between the sync and the start of the watch.
    for changes in watchfiles.watch(
        root,
        watch_filter=relevant,
        debounce=debounce_ms,
        stop_event=stop,
        raise_interrupt=False,
        yield_on_timeout=True,
        rust_timeout=1000,
    ):
        if changes or not synced:
            if changes:
                log.info("%d changes under %s; syncing", len(changes), root)
            sync_once()
            synced = True
