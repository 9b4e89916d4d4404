"""What listing documents and filtering retrieval cost on an existing index, opened read-only.

    .venv/bin/python benchmarks/document_filters.py DATA_DIR [--corpus NAME] [--questions Q.json]

Prints: `list_documents` from the store alone (no graph, no model: what a fresh server or
`cuerag documents` pays), then with the snapshot loaded (first page and a later one), the time to
resolve a filter of 1,000 document ids, and Q-Iter's median time per question without a filter and
with filters of 200 and 1,000 document ids (every hit checked to lie inside).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from cuerag import CueRag, QIterParams, Settings
from cuerag.retrieval.filters import DocFilter
from cuerag.retrieval.subset import select

QUESTIONS = [
    "Who was born first?",
    "Where was the director of the film born?",
    "What is the nationality of the performer?",
    "When did the composer die?",
    "Which country is the publisher from?",
]


def ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--corpus")
    parser.add_argument("--questions", type=Path, help="A JSON list of questions (or of objects with 'question').")
    args = parser.parse_args()
    questions = QUESTIONS
    if args.questions:
        raw = json.loads(args.questions.read_text())
        questions = [q["question"] if isinstance(q, dict) else str(q) for q in raw][:20]

    engine = CueRag(Settings(data_dir=args.data_dir, read_only=True))
    corpus = args.corpus or engine.corpora()[0]
    started = time.perf_counter()
    first = engine.list_documents(corpus, limit=200)
    print(f"{corpus}: {first.total} documents; list_documents from the store: {ms(started):.0f} ms")
    started = time.perf_counter()
    graph = engine.graph(corpus)
    print(f"graph loaded in {ms(started) / 1000:.1f} s: {graph.sizes}")
    started = time.perf_counter()
    first = engine.list_documents(corpus, limit=200)
    print(f"list_documents with the snapshot: first page {ms(started):.0f} ms (builds the table)", end="")
    started = time.perf_counter()
    engine.list_documents(corpus, limit=200, cursor=first.next_cursor)
    print(f", next page {ms(started):.1f} ms")

    table = engine.retriever(corpus).derived.documents()
    every = list(table.infos)
    started = time.perf_counter()
    select(graph, table, DocFilter(doc_ids=every[:1000]))
    print(f"resolving a filter of {min(1000, len(every))} document ids: {ms(started):.0f} ms")

    def median(filter: DocFilter | None) -> float:
        times = []
        for question in questions:
            started = time.perf_counter()
            result = engine.query(corpus, question, params=QIterParams(), filter=filter)
            times.append(ms(started))
            if filter is not None and filter.doc_ids is not None:
                assert {h.doc_id for h in result.chunks} <= set(filter.doc_ids)
        return statistics.median(times)

    median(None)  # loads the models and the snapshot's derived indexes
    print(f"q_iter median over {len(questions)} questions: no filter {median(None):.0f} ms", end="")
    for size in (200, 1000):
        print(f"; {size} documents {median(DocFilter(doc_ids=every[:size])):.0f} ms", end="")
    print()
    engine.close()


if __name__ == "__main__":
    main()
