"""What the stored theme hierarchy costs (issue 32, item 7), and the noise its drift figure is
read against.

    OMP_NUM_THREADS=1 python benchmarks/themes_cost.py DATA_DIR CORPUS [QUESTIONS_JSON]

DATA_DIR must be writable (copy an index first: the hierarchy is written into it). Prints:

* build: the first build of the hierarchy from the corpus's snapshot and its write to the store
  (seconds, and Python's peak allocation during it, by tracemalloc), beside the snapshot's load;
* drift noise: the drift (1 − mean best leaf Jaccard) between a fresh build and a fresh build with
  another Leiden seed, and with one document in a hundred removed: what `REBUILD_DRIFT` must clear;
* an incremental update after deleting nothing but rebuilding from the stored hierarchy's state
  (the no-op a rerun costs);
* global search latency (p50 / p90 over the questions, or 20 fixed broad questions).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

from cuerag.communities.docgraph import document_edges, tfidf_vectors
from cuerag.communities.documents import DocTable
from cuerag.communities.hierarchy import hierarchical_leiden
from cuerag.communities.index import MAX_CLUSTER_SIZE
from cuerag.communities.live import drift
from cuerag.communities.stored import drop_themes
from cuerag.config import Settings
from cuerag.engine.facade import CueRag
from cuerag.engine.theme_updates import update_stored_themes

FALLBACK_QUESTIONS = [
    "What are the main topics of this corpus?",
    "Which documents discuss films and their directors?",
    "What does the corpus say about football clubs?",
    "Who are the politicians mentioned and what offices did they hold?",
    "What is said about rivers and lakes?",
]


def main() -> None:
    data_dir, corpus = Path(sys.argv[1]), sys.argv[2]
    questions = FALLBACK_QUESTIONS * 4
    if len(sys.argv) > 3:
        raw = json.loads(Path(sys.argv[3]).read_text())
        questions = [q.get("question", "") for q in (raw if isinstance(raw, list) else raw["questions"])][:40]
    engine = CueRag(Settings(data_dir=data_dir))
    started = time.perf_counter()
    graph = engine.graph(corpus)
    load = time.perf_counter() - started
    docs = DocTable.build(graph)
    print(f"{corpus}: {len(docs)} documents, {len(graph.chunk_ids)} chunks, {len(graph.unit_ids)} units")
    print(f"snapshot load {load:.2f}s")

    drop_themes(engine.store, corpus)  # measure a first build
    tracemalloc.start()
    started = time.perf_counter()
    report = update_stored_themes(engine._parts, corpus, graph)
    build = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert report is not None
    print(
        f"hierarchy build + store write: {build:.2f}s, peak {peak / 2**20:.0f} MiB (tracemalloc), "
        f"{report.communities} communities in {report.levels} levels, {report.written} points written"
    )
    started = time.perf_counter()
    again = update_stored_themes(engine._parts, corpus, graph)
    spent = time.perf_counter() - started
    print(f"update with nothing changed: {spent:.2f}s ({again.written if again else 0} written)")

    tfidf, _ = tfidf_vectors(docs.doc_texts(graph))
    edges = document_edges(graph, docs, tfidf)
    fresh = hierarchical_leiden(len(docs), edges, max_cluster_size=MAX_CLUSTER_SIZE)
    for seed in (1, 2):
        other = hierarchical_leiden(len(docs), edges, max_cluster_size=MAX_CLUSTER_SIZE, seed=seed)
        print(f"drift, fresh vs fresh with seed {seed}: {drift(fresh, other):.3f}")
    gone = set(range(0, len(docs), 100))
    fewer = [(a, b, w) for a, b, w in edges if a not in gone and b not in gone]
    other = hierarchical_leiden(len(docs), fewer, max_cluster_size=MAX_CLUSTER_SIZE)
    print(f"drift, fresh vs fresh without 1% of the documents' edges: {drift(fresh, other):.3f}")

    engine.global_search(corpus, questions[0])  # models loaded, hierarchy read
    times = []
    for q in questions:
        started = time.perf_counter()
        engine.global_search(corpus, q)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    p90 = times[int(0.9 * (len(times) - 1))]
    print(f"global search over {len(times)} questions: p50 {statistics.median(times):.0f} ms, p90 {p90:.0f} ms")
    engine.close()


if __name__ == "__main__":
    main()
