"""Real SIGKILLs across a run (issue 29, item 1): the MCP server over stdio killed at a sweep of
instants while it syncs an edited folder, and `cuerag watch` killed at a sweep of instants after
the edit; each killed store reopened (files served torn, documents lost), then rerun and compared
with an uninterrupted run (documents, chunk texts, versions, nothing left over).

    OMP_NUM_THREADS=1 PYTHONPATH=$PWD .venv/bin/python benchmarks/timed_kills.py \
        [--fractions 0.5,0.6,0.7,0.8,0.9,1.0] [--store-notices 1,2,4,8] [--work /tmp/kills]

An uninterrupted run of each is timed first (server: from the request to the answer, its model
load included; watch: from the edit to the report); the kills then fall at those fractions of it,
and (server) at the N-th progress notice of the store stage. Prints one line per kill and the totals.
The corpus and the checks are the suite's (tests/killing.py, tests/server/test_timed_kills.py).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))

import killing

from cuerag.config import Settings
from cuerag.engine.facade import CueRag
from cuerag.models.loading import Models, load_models


def _sync(models: Models, data: Path, folder: Path) -> tuple[dict, dict]:  # type: ignore[type-arg]
    engine = CueRag(killing.settings(data), models=models)
    try:
        engine.index_paths(killing.CORPUS, [folder], sync=True)
        return killing.served(engine), killing.full_state(engine)
    finally:
        engine.close()


def _seen(models: Models, data: Path) -> dict:  # type: ignore[type-arg]
    engine = CueRag(killing.settings(data), models=models)
    try:
        return killing.served(engine)
    finally:
        engine.close()


def _kill(kind: str, data: Path, folder: Path, seconds: float | None, notice: int | None) -> killing.Kill:
    """One run of the server (syncing the edit) or the watch (making it), killed as asked."""
    if kind == "server":
        killing.second_version(folder)
        return killing.kill_server_mid_index(data, folder, after_s=seconds, at_progress=notice)
    killing.first_version(folder)
    return killing.kill_watch_mid_update(data, folder, after_s=seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fractions", default="0.5,0.6,0.7,0.8,0.9,1.0", help="Of an uninterrupted run's time.")
    parser.add_argument("--store-notices", default="1,2,4,8", help="Server kills at these store notices.")
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="timed-kills-"))
    models = load_models(Settings(data_dir=work / "models"))
    folder, base = work / "docs", work / "base"
    folder.mkdir(parents=True)
    killing.first_version(folder)
    before, _ = _sync(models, base, folder)
    killing.second_version(folder)
    shutil.copytree(base, work / "reference")
    after, reference = _sync(models, work / "reference", folder)
    timing = {}
    for kind in ("server", "watch"):
        data = work / f"timing-{kind}"
        shutil.copytree(base, data)
        timing[kind] = _kill(kind, data, folder, None, None).seconds
        shutil.rmtree(data)
    print(f"uninterrupted: server {timing['server']:.1f}s from the request, watch {timing['watch']:.1f}s from the edit")
    fractions = [float(f) for f in args.fractions.split(",") if f]
    plans = [(kind, timing[kind] * f, None) for kind in ("server", "watch") for f in fractions]
    plans += [("server", None, int(n)) for n in args.store_notices.split(",") if n]
    totals = {"kills": 0, "mid-run": 0, "torn": 0, "lost": 0, "reruns off": 0}
    for n, (kind, seconds, notice) in enumerate(plans):
        data = work / f"kill-{n}"
        shutil.copytree(base, data)
        kill = _kill(kind, data, folder, seconds, notice)
        seen = _seen(models, data)
        files = before.keys() | after.keys() | seen.keys()
        torn = [f for f in files if seen.get(f, {}) not in (before.get(f, {}), after.get(f, {}))]
        lost = sum(len(before.get(f, {}).keys() & after.get(f, {}).keys() - seen.get(f, {}).keys()) for f in files)
        new_files = sum(seen.get(f) == after.get(f) != before.get(f) for f in files)
        rerun, state = _sync(models, data, folder)
        off = rerun != after or state != reference
        totals["kills"] += 1
        totals["mid-run"] += not kill.finished
        totals["torn"] += len(torn)
        totals["lost"] += lost
        totals["reruns off"] += off
        when = f"store notice {notice}" if notice else f"{kill.seconds:5.1f}s"
        print(
            f"{kind:6} kill at {when:16}: {'finished first' if kill.finished else 'mid-run':14} "
            f"files in their new version {new_files}/{len(after)}, torn {len(torn)}, documents lost {lost}, "
            f"rerun {'OFF' if off else 'equal'}",
            flush=True,
        )
        shutil.rmtree(data)
    print("totals:", totals)
    if args.work is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
