"""Compare the two embedded stores on the operations the engine uses.

    .venv/bin/python benchmarks/store_backends.py --points 30000

Random L2-normalised 384-d vectors with small payloads: upsert in batches of 256, reopen and
scroll everything (what start-up does), and top-10 search latency. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from cuerag.store.base import StoredPoint, VectorStore
from cuerag.store.edge_store import EdgeStore
from cuerag.store.qdrant_client_store import QdrantClientStore

DIM = 384


def _open(kind: str, path: Path) -> VectorStore:
    return EdgeStore(path) if kind == "edge" else QdrantClientStore.local(path)


def run(kind: str, n: int, root: Path, queries: int = 200) -> dict[str, float]:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [str(uuid.UUID(int=i + 1)) for i in range(n)]
    store = _open(kind, root)
    store.create_collection("bench", DIM)
    t0 = time.perf_counter()
    for start in range(0, n, 256):
        store.upsert(
            "bench",
            [
                StoredPoint(
                    id=ids[i], vector=vectors[i], payload={"text": f"unit {i} " * 8, "entity_ids": ids[i : i + 3]}
                )
                for i in range(start, min(n, start + 256))
            ],
        )
    upsert = time.perf_counter() - t0
    store.close()
    t0 = time.perf_counter()
    store = _open(kind, root)
    scrolled = sum(1 for _ in store.scroll("bench", with_vectors=True))
    reopen = time.perf_counter() - t0
    assert scrolled == n
    latencies = []
    for q in vectors[:queries]:
        t = time.perf_counter()
        store.search("bench", q, 10)
        latencies.append((time.perf_counter() - t) * 1000)
    store.close()
    return {"upsert_s": upsert, "reopen_scroll_s": reopen, "search_p50_ms": float(np.percentile(latencies, 50))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=int, default=30_000)
    parser.add_argument("--engines", default="edge,local")
    args = parser.parse_args()
    print("| points | engine | upsert | reopen + scroll all | search p50 |")
    print("|---|---|---|---|---|")
    for kind in args.engines.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            r = run(kind, args.points, Path(tmp))
        print(
            f"| {args.points:,} | {kind} | {r['upsert_s']:.1f} s | {r['reopen_scroll_s']:.1f} s | "
            f"{r['search_p50_ms']:.1f} ms |",
            flush=True,
        )


if __name__ == "__main__":
    main()
