"""Time chunk valuation (BLEU against all other chunks) and the budgeted knapsack on a real corpus.

    .venv/bin/python benchmarks/selection_bench.py [--corpus FILE] [--alpha 0.5]

Each passage of the corpus (a JSON list of {"title", "text"}) is one chunk, `title + "\\n" + text`;
its weight is its token count (`cuerag.text.tools.TextTools().count_tokens`). Prints the time of
`bleu_values` and of `select_chunks` at the given alpha, and what was selected.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from cuerag.index.knapsack import bleu_values, select_chunks
from cuerag.text.tools import TextTools

DEFAULT_CORPUS = (
    Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "2wikimultihopqa" / "2wikimultihopqa_corpus.json"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--alpha", type=float, default=0.5)
    args = parser.parse_args()

    passages = json.loads(args.corpus.read_text(encoding="utf-8"))
    texts = [f"{p['title']}\n{p['text']}" for p in passages]
    tools = TextTools()
    start = time.perf_counter()
    weights = [tools.count_tokens(t) for t in texts]
    t_tokens = time.perf_counter() - start

    start = time.perf_counter()
    values = bleu_values(texts)
    t_bleu = time.perf_counter() - start

    start = time.perf_counter()
    chosen = select_chunks(values, weights, args.alpha)
    t_select = time.perf_counter() - start

    total = sum(weights)
    used = sum(weights[i] for i in chosen)
    print(f"chunks: {len(texts)}  tokens: {total}  (token counting {t_tokens:.2f} s)")
    print(f"bleu_values: {t_bleu:.2f} s  (mean {values.mean():.4f}, max {values.max():.4f})")
    print(
        f"select_chunks(alpha={args.alpha}): {t_select:.2f} s  -> {len(chosen)} chunks, "
        f"{used}/{total} tokens, value {values[chosen].sum():.4f} of {values.sum():.4f}"
    )
    print(f"total (bleu + select): {t_bleu + t_select:.2f} s")


if __name__ == "__main__":
    main()
