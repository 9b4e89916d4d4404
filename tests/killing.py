"""The corpus, the views of a store and the process drivers of the kill tests (issue 29, item 1):
a folder of multi-chunk notes and a JSONL file in two versions; what a reader is served and
everything a fresh index decides; and real processes (the MCP server over stdio, `cuerag watch`)
started on it and killed with SIGKILL while they write. Shared by tests/engine/test_kill_sweep.py,
tests/server/test_timed_kills.py and benchmarks/timed_kills.py (a wider sweep of instants)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from mcp_types import LATEST_PROTOCOL_VERSION

from cuerag.communities.stored import load_themes
from cuerag.config import Settings
from cuerag.engine.facade import CueRag
from cuerag.graph.schema import KINDS, THEMES, collection_name
from cuerag.models.loading import Models

BATCH = 4  # points per store write: many batch boundaries from a small corpus
CORPUS = "c"
REPO = Path(__file__).parents[1]  # the checkout: its cuerag, not an installed one


def settings(data: Path) -> Settings:
    return Settings(data_dir=data, write_batch=BATCH, chunk_tokens=48, chunk_overlap=0)


def note(n: int, edited: bool = False) -> str:
    second = f"Tower {n} was rebuilt in {1950 + n}." if edited else f"Tower {n} was repaired in {1900 + n}."
    return (
        f"# Note {n}\n\n## Origin\n\nTown {n} was founded by Chief {n} near the river.\n\n"
        f"## Tower\n\n{second} It has {n + 3} floors.\n\n## Market\n\nThe market of town {n} sells fish.\n"
    )


def records(ids: range, edited: int | None = None) -> str:
    lines = []
    for n in ids:
        text = f"Record {n} says that harbour {n} opened in {1800 + n}."
        if n == edited:
            text = f"Record {n} says that harbour {n} closed in {1990 + n}."
        lines.append(json.dumps({"id": f"rec-{n}", "title": f"Harbour {n}", "text": text}))
    return "\n".join(lines) + "\n"


def first_version(folder: Path) -> None:
    for n in range(3):
        (folder / f"note{n}.md").write_text(note(n))
    (folder / "records.jsonl").write_text(records(range(9)))


def second_version(folder: Path) -> None:
    """One section edited in each note; in the records, one edited, one gone, one new."""
    for n in range(3):
        (folder / f"note{n}.md").write_text(note(n, edited=True))
    (folder / "records.jsonl").write_text(records(range(1, 10), edited=4))


def served(engine: CueRag) -> dict[str, dict[str, tuple[str, ...]]]:
    """What a reader is served, by file: document id -> its chunks' texts in order."""
    if CORPUS not in engine.corpora():
        return {}
    graph = engine.graph(CORPUS)
    assert graph.points is not None
    out: dict[str, dict[str, list[tuple[int, str]]]] = {}
    for point in graph.points.chunks.values():
        p = point.payload
        out.setdefault(f"{p.get('source')}", {}).setdefault(p["doc_id"], []).append((p["index"], p["text"]))
    return {f: {d: tuple(t for _, t in sorted(c)) for d, c in docs.items()} for f, docs in out.items()}


def full_state(engine: CueRag) -> dict[str, Any]:
    """Everything a fresh index decides: served points (ids, payloads but the write time), units,
    entities, and no stored point left over."""
    if CORPUS not in engine.corpora():
        return {}
    graph = engine.graph(CORPUS)
    assert graph.points is not None
    chunks = {
        cid: {k: v for k, v in p.payload.items() if k != "written"} for cid, p in sorted(graph.points.chunks.items())
    }
    stored = {kind: engine.store.count(collection_name(CORPUS, kind)) for kind in KINDS}
    sizes = map(len, (graph.chunk_ids, graph.unit_ids, graph.entity_ids))
    leftover = {k: stored[k] - n for k, n in zip(KINDS, sizes, strict=True)}
    # The theme hierarchy (issue 32): the stored communities, and no theme point left over.
    themes = load_themes(engine.store, CORPUS)
    assert themes is not None
    # Compared by membership, not by id: ids are kept stable along a corpus's history (an update
    # matches old communities to new ones), so a run killed after the moved files' new documents
    # were written and themed, then rerun, can number a community of wholly new members otherwise
    # than one uninterrupted run does. What must match is the hierarchy itself: every community's
    # level, documents, title, and its parent's and children's documents.
    docs = {t: tuple(r.documents) for t, r in themes.reports.items()}
    hierarchy = sorted(
        (
            r.level,
            docs[t],
            r.title,
            docs.get(r.parent) if r.parent else None,
            sorted(docs[c] for c in r.children if c in docs),
        )
        for t, r in themes.reports.items()
    )
    leftover[THEMES] = engine.store.count(collection_name(CORPUS, THEMES)) - len(themes.reports) - 1
    return {
        "chunks": chunks,
        "units": sorted(graph.unit_ids),
        "entities": sorted(graph.entity_ids),
        "left": leftover,
        "themes": hierarchy,
    }


def state_at(data: Path, models: Models) -> tuple[dict[str, dict[str, tuple[str, ...]]], dict[str, Any]]:
    """What a reopened store serves, by file, and its full state."""
    engine = CueRag(settings(data), models=models)
    try:
        return served(engine), full_state(engine)
    finally:
        engine.close()


def process_env(data: Path) -> dict[str, str]:
    """A subprocess's environment: the kill tests' small batches, this data dir, no hub access and
    none of a developer's CUERAG_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUERAG_")}
    env |= {"CUERAG_WRITE_BATCH": str(BATCH), "CUERAG_CHUNK_TOKENS": "48", "CUERAG_CHUNK_OVERLAP": "0"}
    env |= {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    env |= {"CUERAG_DATA_DIR": str(data), "PYTHONPATH": str(REPO)}
    return env


def cli_sync(data: Path, folder: Path) -> None:
    """`cuerag index FOLDER --sync`, the rerun after a kill (and the uninterrupted reference)."""
    args = [sys.executable, "-m", "cuerag", "index", str(folder), "--corpus", CORPUS, "--sync"]
    done = subprocess.run(args, env=process_env(data), cwd=REPO, capture_output=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]


@dataclass
class Kill:
    """Where a run was killed: after `seconds` from the request (or the change), at the progress
    message `at` ("" when killed on time alone), or not at all because it had finished."""

    seconds: float
    at: str = ""
    finished: bool = False


def _send(stdin: IO[bytes], message: dict[str, Any]) -> None:
    stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    stdin.flush()


def _answer(stdout: IO[bytes], request_id: int) -> dict[str, Any]:
    while line := stdout.readline():
        message = json.loads(line)
        if message.get("id") == request_id:
            return dict(message)
    raise AssertionError("the server closed stdout before answering")


def kill_server_mid_index(
    data: Path, folder: Path, *, at_progress: int | None = None, after_s: float | None = None
) -> Kill:
    """Start the MCP server over stdio, ask it to sync `folder` into the corpus, and SIGKILL it at
    its `at_progress`-th progress notification of the store stage (chunks landing) or `after_s`
    seconds after the request: a real process, killed from outside, wherever it is. With neither,
    the run is let finish (its time from the request to the answer)."""
    args = [sys.executable, "-m", "server.main", "--data-dir", str(data), "--allowed-root", str(folder.parent)]
    with (folder.parent / f"{data.name}.server.log").open("wb") as errlog:
        proc = subprocess.Popen(
            args, cwd=REPO, env=process_env(data), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            client = {"name": "killer", "version": "0"}
            params = {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": client}
            _send(proc.stdin, {"id": 1, "method": "initialize", "params": params})
            _answer(proc.stdout, 1)
            _send(proc.stdin, {"method": "notifications/initialized"})
            arguments = {"corpus": CORPUS, "paths": [str(folder)], "sync": True}
            call = {"name": "index_corpus", "arguments": arguments, "_meta": {"progressToken": "p"}}
            _send(proc.stdin, {"id": 2, "method": "tools/call", "params": call})
            started = time.monotonic()
            if after_s is not None:
                time.sleep(after_s)
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                # Whether the answer was written before the kill: the run had finished.
                answered = any(json.loads(line).get("id") == 2 for line in proc.stdout.read().splitlines())
                return Kill(after_s, finished=answered)
            stores = 0
            while line := proc.stdout.readline():
                message = json.loads(line)
                if message.get("id") == 2:
                    return Kill(time.monotonic() - started, finished=True)
                said = str(message.get("params", {}).get("message", ""))
                if said.startswith("store") and (stores := stores + 1) == at_progress:
                    proc.send_signal(signal.SIGKILL)
                    return Kill(time.monotonic() - started, at=said)
            raise AssertionError("the server closed stdout mid-run")
        finally:
            proc.kill()
            proc.wait()


def kill_watch_mid_update(data: Path, folder: Path, *, after_s: float | None, change: Any = None) -> Kill:
    """Start `cuerag watch` on `folder`, wait for its first sync, make `change` (the folder's second
    version by default) and SIGKILL the watch `after_s` seconds later (None: once it has synced
    the change, which times an uninterrupted update)."""
    args = [sys.executable, "-m", "cuerag", "watch", str(folder), "--corpus", CORPUS, "--debounce-ms", "50"]
    with (folder.parent / f"{data.name}.watch.log").open("wb") as errlog:
        proc = subprocess.Popen(args, cwd=REPO, env=process_env(data), stdout=subprocess.PIPE, stderr=errlog)
        assert proc.stdout is not None
        try:
            # The first sync's report ends with its totals line: the watch is in place from then.
            while (line := proc.stdout.readline()) and not line.startswith(b"corpus "):
                pass
            assert line, "the watch ended before its first sync"
            (change or second_version)(folder)
            if after_s is None:
                started = time.monotonic()
                while (line := proc.stdout.readline()) and not line.startswith(b"corpus "):
                    pass
                return Kill(time.monotonic() - started, finished=True)
            time.sleep(after_s)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            # A second report written before the kill: the sync of the change had finished.
            return Kill(after_s, finished=b"\ncorpus " in b"\n" + proc.stdout.read())
        finally:
            proc.kill()
            proc.wait()
