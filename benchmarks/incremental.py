"""Cost of changing a large index: add, delete and re-add a batch of documents.

    .venv/bin/python benchmarks/incremental.py --data-dir DIR --corpus NAME --extra FILE [--count 100]

Against an existing index (e.g. the 2Wiki index `cuerag bench` builds), adds `--count` documents
taken from `--extra` (a corpus file whose documents are not in the index), deletes them again and
re-adds them, timing each step and checking that Q-Iter's answers to a fixed set of questions are
the same before and after the delete + re-add.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from cuerag import CueRag, QIterParams, Settings, load_paths
from cuerag.evaluation.bench import make_queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", required=True, type=Path)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--extra", required=True, type=Path)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument(
        "--questions",
        type=Path,
        help="A question file for the corpus in --extra (already indexed as --corpus): delete and re-add "
        "--count of its gold passages and compare Q-Iter's answers to these questions before and after.",
    )
    args = parser.parse_args()
    if args.questions:
        round_trip(args)
        return

    engine = CueRag(Settings(data_dir=args.data_dir))
    t0 = time.perf_counter()
    graph = engine.graph(args.corpus)
    print(f"open: graph of {graph.sizes} rebuilt from the store in {time.perf_counter() - t0:.2f} s")
    extra = [d for d in load_paths([args.extra]) if not graph.doc_chunks().get(d.id)][: args.count]
    questions = make_queries([d.title for d in extra] + graph.chunk_titles[:200], 50, seed=3)
    params = QIterParams()

    def answers() -> list[list[str]]:
        return [[h.chunk_id for h in engine.query(args.corpus, q, params=params).chunks] for q in questions]

    t0 = time.perf_counter()
    added = engine.index_documents(args.corpus, extra)
    print(
        f"add {len(extra)} documents: {time.perf_counter() - t0:.2f} s "
        f"(stages {added.stage_seconds}; {added.units_added} units, {added.entities_added} entities new)"
    )
    before = answers()
    t0 = time.perf_counter()
    deleted = engine.delete_documents(args.corpus, [d.id for d in extra])
    print(
        f"delete them: {time.perf_counter() - t0:.2f} s ({deleted.chunks_deleted} chunks, "
        f"{deleted.units_removed} units, {deleted.entities_removed} entities removed)"
    )
    t0 = time.perf_counter()
    engine.index_documents(args.corpus, extra)
    print(f"re-add them: {time.perf_counter() - t0:.2f} s")
    after = answers()
    same = sum(a == b for a, b in zip(before, after, strict=True))
    print(f"Q-Iter top-5 identical before and after delete + re-add for {same} of {len(questions)} questions")
    engine.close()


def round_trip(args: argparse.Namespace) -> None:
    """Delete + re-add indexed documents that questions need; answers must come back the same."""
    from cuerag.evaluation.questions import load_questions

    engine = CueRag(Settings(data_dir=args.data_dir))
    docs = load_paths([args.extra])
    questions = load_questions(args.questions, docs)
    by_id = {d.id: d for d in docs}
    gold = list(dict.fromkeys(g for q in questions for g in q.gold_doc_ids))[: args.count]
    params = QIterParams()

    def answers() -> list[list[str]]:
        return [[h.chunk_id for h in engine.query(args.corpus, q.question, params=params).chunks] for q in questions]

    before = answers()
    t0 = time.perf_counter()
    engine.delete_documents(args.corpus, gold)
    print(f"delete {len(gold)} gold passages: {time.perf_counter() - t0:.2f} s")
    during = answers()
    t0 = time.perf_counter()
    engine.index_documents(args.corpus, [by_id[g] for g in gold])
    print(f"re-add them: {time.perf_counter() - t0:.2f} s")
    after = answers()
    changed = sum(a != b for a, b in zip(before, during, strict=True))
    same = sum(a == b for a, b in zip(before, after, strict=True))
    print(f"while deleted, Q-Iter's top-5 changed for {changed} of {len(questions)} questions")
    print(f"after re-adding, Q-Iter's top-5 is identical to before for {same} of {len(questions)} questions")
    engine.close()


if __name__ == "__main__":
    main()
