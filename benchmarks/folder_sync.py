"""Cost of `cuerag index --sync` on a folder where one of N files changed, against the first index.

    .venv/bin/python benchmarks/folder_sync.py [--files 200] [--corpus-file ../shared/data/hotpotqa/...]

Writes N Markdown files (`# title` + text, one passage each, from a real corpus file) into a temp
folder, then runs the real CLI as a user would, each a fresh process: the first `index --sync`, a
sync with nothing changed, and a sync after one file was edited. Prints each command's wall time,
the engine's own time and its stage breakdown (read = walk + hash + parse of changed files), and
`cuerag corpora` as the fixed cost of a process that loads the models. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DEFAULT_CORPUS = Path("../shared/data/hotpotqa/hotpotqa_train100_corpus.json")


def records(path: Path, count: int) -> list[tuple[str, str]]:
    data = json.loads(path.read_text())
    items = (
        [(r["title"], r.get("text") or r.get("paragraph_text", "")) for r in data]
        if isinstance(data, list)
        else [(t, "".join(v) if isinstance(v, list) else v) for t, v in data.items()]
    )
    out = [(t, x) for t, x in items if x.strip()][:count]
    if len(out) < count:
        raise SystemExit(f"{path} holds only {len(out)} non-empty passages")
    return out


def cli(data_dir: Path, *args: str) -> tuple[float, Any]:
    env = {**os.environ, "CUERAG_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cuerag.cli.app", *args], env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"cuerag {' '.join(args)} failed:\n{done.stderr}{done.stdout}")
    return wall, json.loads(done.stdout) if "--json" in args else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--corpus-file", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="folder-sync-"))
    folder, data_dir = work / "notes", work / "data"
    folder.mkdir()
    passages = records(args.corpus_file, args.files)
    for i, (title, text) in enumerate(passages):
        (folder / f"note-{i:04d}.md").write_text(f"# {title}\n\n{text}\n")
    total_bytes = sum(p.stat().st_size for p in folder.iterdir())
    print(f"{args.files} files, {total_bytes / 1024:.0f} KiB, from {args.corpus_file}")

    index = ("index", str(folder), "--corpus", "notes", "--sync", "--json")
    rows = []
    rows.append(("cuerag corpora (model load, no index work)", cli(data_dir, "corpora")[0], None))
    rows.append((f"index --sync, first ({args.files} files new)", *cli(data_dir, *index)))
    rows.append(("index --sync, nothing changed", *cli(data_dir, *index)))
    edited = folder / "note-0007.md"
    edited.write_text(edited.read_text() + "It was edited once, on a Tuesday, in the benchmark.\n")
    rows.append((f"index --sync, 1 of {args.files} files changed", *cli(data_dir, *index)))

    print("| run | wall s | engine s | files added/changed/skipped | chunks embedded | stages (s) |")
    print("|---|---|---|---|---|---|")
    for name, wall, report in rows:
        if report is None:
            print(f"| {name} | {wall:.1f} | | | | |")
            continue
        files = f"{len(report['added'])}/{len(report['changed'])}/{len(report['skipped'])}"
        stages = ", ".join(f"{k} {v:.2f}" for k, v in report["stage_seconds"].items())
        print(
            f"| {name} | {wall:.1f} | {report['elapsed_seconds']:.2f} | {files} | {report['chunks_added']} | {stages} |"
        )


if __name__ == "__main__":
    main()
