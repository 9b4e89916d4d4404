"""Global search's latency on an existing index (issue 32, item 7: p50 ≤ 300 ms on 2Wiki).

    python benchmarks/global_latency.py DATA_DIR CORPUS [QUESTIONS_JSON] [--method global]
    python benchmarks/global_latency.py DATA_DIR CORPUS [QUESTIONS_JSON] --method tool [--budget 2000]

Opens DATA_DIR read-only, builds the corpus's community index once (timed apart: it is built on
the first global query of a snapshot and kept with it), then times each question's retrieval of
10 chunks through the engine, as `cuerag query --method global` runs it, and prints p50 / p95;
`--method tool` times the `global_search` tool's call instead (`cuerag global`: the ranking, then
the statements of its documents within the budget).
Without a question file it asks the broad questions below, written for an encyclopedic corpus
such as 2WikiMultiHopQA's (the questions only set the work done, not any figure of quality).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from cuerag.config import QIterParams, Settings
from cuerag.engine.facade import CueRag

BROAD = [
    "Which films and their directors does the collection describe?",
    "What do these articles say about football clubs and their players?",
    "Which politicians and the offices they held are covered?",
    "What rivers, lakes and mountains are described, and where are they?",
    "Which musicians and bands appear, and what did they record?",
    "What does the collection say about royal families and their marriages?",
    "Which writers and their novels are discussed?",
    "What universities and schools are mentioned, and who studied there?",
    "Which television series and their casts are covered?",
    "What do the articles say about wars, battles and military leaders?",
    "Which painters and sculptors are described?",
    "What towns and villages are described, and in which countries?",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("corpus")
    parser.add_argument("questions", type=Path, nargs="?")
    parser.add_argument("--method", default="global", choices=["global", "archrag", "leanrag", "tool"])
    parser.add_argument("--budget", type=int, default=2000, help="global_search's token budget (--method tool)")
    args = parser.parse_args()
    questions = BROAD
    if args.questions is not None:
        questions = [q["question"] for q in json.loads(args.questions.read_text())]
    engine = CueRag(Settings(data_dir=args.data_dir, read_only=True))
    index = engine.communities(args.corpus)
    started = time.perf_counter()
    part = {"global": lambda: index.hierarchy, "archrag": lambda: index.archrag, "leanrag": lambda: index.leanrag}
    part.get(args.method, part["global"])()
    _ = index.docs
    built = time.perf_counter() - started
    params = QIterParams().model_copy(update={"top_n": 10})

    def ask(question: str) -> None:
        if args.method == "tool":
            engine.global_search(args.corpus, question, budget_tokens=args.budget)
        else:
            engine.query(args.corpus, question, params=params, method=args.method)

    ask(questions[0])  # warm the models
    times = []
    for question in questions:
        started = time.perf_counter()
        ask(question)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    print(f"{args.method}: {len(index.docs)} documents; index parts built in {built:.1f} s {index.build_seconds}")
    print(f"{args.method}: {len(times)} questions, p50 {statistics.median(times):.0f} ms, p95 {p95:.0f} ms")


if __name__ == "__main__":
    main()
