"""One index, many processes (issue 31 item 5, issue 30 item 7): what the CLI's query costs
through a running server against loading the models itself, and a scripted mixed run.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/sharing.py [--ops 12] [--clients 2] [--pace 2]
        [--queries 3] [--mixed-only] [--work /tmp/cuerag-sharing]

Prints: the wall time of `cuerag query` (a fresh process: Python start, imports, the query) on the
bundled sample corpus, with a process serving the data directory and without one (left out with
`--mixed-only`); then a mixed run: a holder process opens the data directory first (as the first
MCP server would), `--clients` client processes attach and each makes `--ops` operations `--pace`
seconds apart (an index of a new document into its own corpus, then a query, in turn) while the
CLI makes queries one after another for as long as the clients work; the holder is SIGKILLed when
half of the clients' operations are done, and each client that ends stops serving if it had taken
over. It counts the errors and the writes a client was told succeeded that are missing at the end
(each acknowledged document id looked up by a fresh process), and the latency of each kind of
operation before and after the kill (median, 90th percentile, largest: a call that met a takeover
waited for it, and the first query of a new owner loads the models).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "cuerag" / "data" / "sample_corpus.json"
QUESTION = "When did the 1979-80 European Cup winner win the FA Cup?"

# A process of the run: holds or attaches, then follows its script; prints one JSON line per op.
WORKER = r"""
import json, sys, time
from cuerag import Settings, make_document, open_engine
data, role, ops, pace = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
engine = open_engine(Settings(data_dir=data), standby=True)
print(json.dumps({"ready": type(engine).__name__}), flush=True)
if role == "holder":
    engine.query("sample", "warm up")
    print(json.dumps({"warm": True}), flush=True)
    time.sleep(3600)
for i in range(ops):
    time.sleep(pace)  # a client's think time: the clients' calls spread over the CLI's and the kill
    doc = f"{role}-{i}"
    start = time.perf_counter()
    try:
        if i % 2 == 0:
            text = f"{role.title()} report {i} was filed in {1950 + i} by the clerk Ada Byron."
            engine.index_documents(role, [make_document(doc, text, doc)])
            op = {"op": "index", "doc": doc}
        else:
            engine.query("sample", "Who won the FA Cup?")
            op = {"op": "query"}
    except Exception as exc:
        op = {"op": "error", "error": f"{type(exc).__name__}: {exc}"[:300]}
    op["s"], op["end"] = round(time.perf_counter() - start, 3), time.time()
    print(json.dumps(op), flush=True)
engine.close()
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUERAG_")}
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(ROOT))
    return env


def _cli(data: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cuerag", "--data-dir", str(data), *args],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=ROOT,
    )
    return time.perf_counter() - start, done


def _worker(data: Path, role: str, ops: int, pace: float = 0.0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(data), role, str(ops), str(pace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=_env(),
        cwd=ROOT,
    )


def _first_line(process: subprocess.Popen[str]) -> dict[str, object]:
    assert process.stdout is not None
    line: dict[str, object] = json.loads(process.stdout.readline())
    return line


def latency(data: Path, queries: int) -> None:
    holder = _worker(data, "holder", 0)
    _first_line(holder), _first_line(holder)  # serving, models loaded
    served = [_cli(data, "query", QUESTION, "--corpus", "sample")[0] for _ in range(queries)]
    holder.send_signal(signal.SIGTERM)
    holder.wait()
    alone = [_cli(data, "query", QUESTION, "--corpus", "sample")[0] for _ in range(queries)]
    print(f"cuerag query, whole process (median of {queries}):")
    print(f"  through a running server: {statistics.median(served):.2f} s  (all: {[round(t, 2) for t in served]})")
    print(f"  loading the models itself: {statistics.median(alone):.2f} s  (all: {[round(t, 2) for t in alone]})")


def _spread(times: list[float]) -> str:
    if not times:
        return "none"
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return f"n {len(times)}, median {statistics.median(times):.2f} s, p90 {p90:.2f} s, max {ordered[-1]:.2f} s"


def mixed(data: Path, ops: int, count: int, pace: float) -> None:
    holder = _worker(data, "holder", 0)
    _first_line(holder), _first_line(holder)
    roles = [f"client{n}" for n in range(count)]
    clients = {role: _worker(data, role, ops, pace) for role in roles}
    for process in clients.values():
        _first_line(process)
    results: dict[str, list[dict[str, Any]]] = {role: [] for role in roles}
    progress = threading.Condition()

    def follow(role: str, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if line.strip():
                with progress:
                    results[role].append(json.loads(line))
                    progress.notify_all()
        process.wait()

    readers = [threading.Thread(target=follow, args=item) for item in clients.items()]
    cli: list[tuple[float, float, int]] = []  # (seconds, end time, return code)
    start = time.perf_counter()

    def queries() -> None:
        # The CLI queries for as long as the clients work, so every phase of the run has some.
        while any(p.poll() is None for p in clients.values()):
            took, done = _cli(data, "query", "Who won the FA Cup?", "--corpus", "sample")
            cli.append((took, time.time(), done.returncode))

    terminal = threading.Thread(target=queries)
    for thread in [*readers, terminal]:
        thread.start()
    with progress:  # the holder is killed when half of the clients' operations are done
        progress.wait_for(lambda: sum(map(len, results.values())) >= count * ops // 2, timeout=3600)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    killed_at = time.time()
    for thread in [*readers, terminal]:
        thread.join()
    elapsed = time.perf_counter() - start
    stored = _stored_ids(data, roles)
    done_ops = [r for rs in results.values() for r in rs]
    errors = [r for r in done_ops if r["op"] == "error"]
    cli_errors = sum(code != 0 for _, _, code in cli)
    written = {role: [r["doc"] for r in rs if r["op"] == "index"] for role, rs in results.items()}
    lost = sorted(doc for role, docs in written.items() for doc in docs if doc not in stored[role])
    print(
        f"mixed run: {count} clients x {ops} ops ({pace} s apart) + {len(cli)} CLI queries alongside; "
        f"holder SIGKILLed after {sum(r['end'] < killed_at for r in done_ops)} client ops"
    )
    print(
        f"  operations {len(done_ops) + len(cli)}, errors {len(errors) + cli_errors} "
        f"(clients {len(errors)}, CLI {cli_errors})"
    )
    print(f"  writes acknowledged {sum(len(docs) for docs in written.values())}, lost {len(lost)} {lost or ''}")
    print(f"  wall {elapsed:.1f} s")
    for kind in ("index", "query"):
        for when, chosen in (("before the kill", True), ("after", False)):
            times = [r["s"] for r in done_ops if r["op"] == kind and (r["end"] < killed_at) == chosen]
            print(f"  client {kind}, {when}: {_spread(times)}")
    for when, chosen in (("before the kill", True), ("after", False)):
        times = [took for took, end, _ in cli if (end < killed_at) == chosen]
        print(f"  CLI query (whole process), {when}: {_spread(times)}")
    for error in errors[:5]:
        print("  error:", error["error"])


def _stored_ids(data: Path, corpora: list[str]) -> dict[str, set[str]]:
    """The document ids each corpus holds at the end, through a fresh process (the last owner ended)."""
    script = (
        "import json, sys\n"
        "from cuerag import Settings, open_engine\n"
        "engine = open_engine(Settings(data_dir=sys.argv[1]))\n"
        "found = {}\n"
        "for corpus in sys.argv[2:]:\n"
        "    ids = []\n"
        "    cursor = None\n"
        "    while corpus in engine.corpora():\n"
        "        page = engine.list_documents(corpus, cursor=cursor, limit=200)\n"
        "        ids += [d.doc_id for d in page.documents]\n"
        "        cursor = page.next_cursor\n"
        "        if cursor is None:\n"
        "            break\n"
        "    found[corpus] = ids\n"
        "print(json.dumps(found))\n"
        "engine.close()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(data), *corpora], capture_output=True, text=True, env=_env(), cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    return {corpus: set(ids) for corpus, ids in json.loads(done.stdout.splitlines()[-1]).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=12)
    parser.add_argument("--queries", type=int, default=3)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--pace", type=float, default=2.0, help="seconds between a client's operations")
    parser.add_argument("--mixed-only", action="store_true", help="leave out the CLI latency comparison")
    parser.add_argument("--work", type=Path, default=Path("/tmp/cuerag-sharing"))
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    data = args.work / "data"
    _, made = _cli(data, "index", str(SAMPLE), "--corpus", "sample")
    assert made.returncode == 0, made.stderr
    if not args.mixed_only:
        latency(data, args.queries)
    mixed(data, args.ops, args.clients, args.pace)


if __name__ == "__main__":
    main()
