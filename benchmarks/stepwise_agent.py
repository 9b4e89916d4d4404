"""A scripted stepwise agent: can walking the graph with the primitive tools match `q_iter`?

    .venv/bin/python benchmarks/stepwise_agent.py --data-dir DIR \
        --questions ../shared/data/hotpotqa/hotpotqa_train100.json \
        --corpus-file ../shared/data/hotpotqa/hotpotqa_train100_corpus.json [--limit 100] [--hops 1]

A fixed policy, no LLM, through a real MCP client talking to the real server over stdio
(`python -m server.main --read-only --stepwise`), using only `search_units`, `expand_entity` and `get_chunks`:

1. `search_units(question, k)`: the statements nearest the question; each starts a path scored by
   its similarity.
2. For `--hops` rounds: take the best `--beam` paths that ended at the last round, and expand the
   entities their last statement names (at most `--fanout` each, none twice) with
   `expand_entity(entity, question, k, exclude=every statement seen, subtract=the path's
   statements)`, as Q-Iter's query update does; a new path scores the mean of its statements'
   similarities.
3. Every chunk a path's statements come from scores its best path; `get_chunks` on the best
   chunks (a few at a time, until they hold five documents) gives their documents, ranked by
   that score.

Beside it, `q_iter` at its defaults on the same index, through the same client. Recall@2/@5 is
counted over distinct documents as `cuerag eval` counts it (a method asked for more chunks until
its top holds k documents); the tokens are cl100k tokens of the text content of every tool result
(what a client shows the model), per question; q_iter's R@2 is read from the same top-5 call an
agent would make (`cuerag eval` makes a top-2 call for it). The corpus is the one `cuerag eval` built from the
corpus file in that data directory (`eval-<hash of the file>`), unless `--corpus` names another.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters, stdio_client

from cuerag import load_paths
from cuerag.evaluation.questions import load_questions
from cuerag.evaluation.runner import corpus_name_for
from cuerag.text.tools import TextTools

ROOT = Path(__file__).resolve().parent.parent
KS = (2, 5)


@dataclass
class Tally:
    """One method's calls, tokens and ranked documents for one question."""

    calls: int = 0
    tokens: int = 0
    seconds: float = 0.0
    docs: list[str] = field(default_factory=list)
    by_tool: dict[str, int] = field(default_factory=dict)  # tokens per tool


class Tools:
    """The MCP client, counting calls and the tokens of what each call returns."""

    def __init__(self, client: Client, corpus: str) -> None:
        self._client = client
        self._corpus = corpus
        self._encoding = TextTools().encoding

    async def call(self, tally: Tally, name: str, **args: Any) -> dict[str, Any]:
        started = time.perf_counter()
        result = await self._client.call_tool(name, {"corpus": self._corpus, **args})
        tally.seconds += time.perf_counter() - started
        tally.calls += 1
        text = "".join(c.text for c in result.content if c.type == "text")
        tokens = len(self._encoding.encode(text, disallowed_special=()))
        tally.tokens += tokens
        tally.by_tool[name] = tally.by_tool.get(name, 0) + tokens
        if result.is_error or result.structured_content is None:
            raise SystemExit(f"{name} failed: {text}")
        return result.structured_content


@dataclass(frozen=True)
class Walk:
    """A path of statements from the question."""

    units: tuple[str, ...]  # unit ids, in the order reached
    scores: tuple[float, ...]
    entities: tuple[str, ...]  # the last unit's entities: where the walk may go next
    chunks: tuple[str, ...]  # the last unit's chunks

    @property
    def score(self) -> float:
        return sum(self.scores) / len(self.scores)


def _walk(before: Walk | None, unit: dict[str, Any]) -> Walk:
    return Walk(
        units=(*(before.units if before else ()), unit["unit_id"]),
        scores=(*(before.scores if before else ()), float(unit["score"])),
        entities=tuple(unit["entity_ids"]),
        chunks=tuple(unit["chunk_ids"]),
    )


def _ranked_chunks(paths: list[Walk], rank: str) -> list[str]:
    """Chunks by their best path. `mean`: one list, by the mean similarity of the path's
    statements. `interleave`: one list per hop, each by its last statement's similarity to what
    the question still asks (the question minus the path so far), taken in turn: the best direct
    match, the best first hop, the next direct match, ..., as a two-hop answer needs one of each."""
    if rank == "mean":
        best: dict[str, float] = {}
        for path in paths:
            for chunk in path.chunks:
                best[chunk] = max(best.get(chunk, -1.0), path.score)
        return sorted(best, key=lambda c: best[c], reverse=True)
    by_hop: dict[int, dict[str, float]] = {}
    for path in paths:
        hop = by_hop.setdefault(len(path.units), {})
        for chunk in path.chunks:
            hop[chunk] = max(hop.get(chunk, -1.0), path.scores[-1])
    lists = [sorted(h, key=lambda c: h[c], reverse=True) for _, h in sorted(by_hop.items())]
    turns = (lst[i] for i in range(max(map(len, lists), default=0)) for lst in lists if i < len(lst))
    return list(dict.fromkeys(turns))


async def stepwise(tools: Tools, question: str, args: argparse.Namespace) -> Tally:
    tally = Tally()
    found = await tools.call(tally, "search_units", query=question, k=args.k)
    paths = [_walk(None, u) for u in found["units"]]
    seen = {u["unit_id"] for u in found["units"]}
    expanded: set[str] = set()
    frontier = paths
    for _ in range(args.hops):
        grown: list[Walk] = []
        for path in sorted(frontier, key=lambda p: p.score, reverse=True)[: args.beam]:
            for entity in [e for e in path.entities if e not in expanded][: args.fanout]:
                expanded.add(entity)
                step = await tools.call(
                    tally,
                    "expand_entity",
                    entity=entity,
                    query=question,
                    k=args.k_hop,
                    exclude=sorted(seen),
                    subtract=list(path.units),
                )
                for unit in step["units"]:
                    seen.add(unit["unit_id"])
                    grown.append(_walk(path, unit))
        paths += grown
        frontier = grown
    ranked = _ranked_chunks(paths, args.rank)
    # The best chunks' documents, fetched a few at a time until the top holds enough documents.
    doc_of: dict[str, str] = {}
    fetched = 0
    while fetched < len(ranked) and len(set(doc_of.values())) < max(KS):
        batch = ranked[fetched : fetched + max(KS) - len(set(doc_of.values()))]
        fetched += len(batch)
        got = await tools.call(tally, "get_chunks", ids=batch)
        doc_of |= {c["chunk_id"]: c["doc_id"] for c in got["chunks"]}
    tally.docs = list(dict.fromkeys(doc_of[c] for c in ranked if c in doc_of))
    return tally


async def one_call(tools: Tools, question: str) -> Tally:
    """q_iter at its defaults; asked for more chunks (as `cuerag eval` does) only while its top
    holds fewer than the largest k documents."""
    tally = Tally()
    top_n = max(KS)
    while True:
        result = await tools.call(tally, "q_iter", query=question, top_n=top_n)
        tally.docs = list(dict.fromkeys(h["doc_id"] for h in result["chunks"]))
        if len(tally.docs) >= max(KS) or len(result["chunks"]) < top_n or top_n >= 100:
            return tally
        top_n = min(2 * top_n, 100)


def _recall(docs: list[str], gold: list[str], k: int) -> float:
    return len(set(docs[:k]) & set(gold)) / len(gold) if gold else 0.0


def _row(name: str, tallies: list[Tally], golds: list[list[str]]) -> str:
    recalls = [statistics.mean(_recall(t.docs, g, k) for t, g in zip(tallies, golds, strict=True)) for k in KS]
    calls = [t.calls for t in tallies]
    tokens = [t.tokens for t in tallies]
    ms = [1000 * t.seconds for t in tallies]
    return (
        f"| {name} | {recalls[0]:.3f} | {recalls[1]:.3f} | {statistics.mean(calls):.1f} | "
        f"{statistics.median(tokens):.0f} / {statistics.mean(tokens):.0f} | {statistics.median(ms):.0f} |"
    )


async def run(args: argparse.Namespace) -> None:
    docs = load_paths([args.corpus_file])
    questions = load_questions(args.questions, docs)[: args.limit]
    corpus = args.corpus or corpus_name_for(args.corpus_file)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "server.main", "--read-only", "--stepwise", "--data-dir", str(args.data_dir)],
        cwd=str(ROOT),
        env={k: v for k, v in os.environ.items() if not k.startswith("CUERAG_")},
    )
    walked: list[Tally] = []
    single: list[Tally] = []
    with open(os.devnull, "w") as quiet:  # the server's logs
        async with Client(stdio_client(params, errlog=quiet)) as client:
            tools = Tools(client, corpus)
            for n, q in enumerate(questions, start=1):
                walked.append(await stepwise(tools, q.question, args))
                single.append(await one_call(tools, q.question))
                if n % 10 == 0:
                    print(f"{n}/{len(questions)} questions", file=sys.stderr)
    golds = [q.gold_doc_ids for q in questions]
    policy = (
        f"k={args.k}, hops={args.hops}, beam={args.beam}, fanout={args.fanout}, k_hop={args.k_hop}, rank={args.rank}"
    )
    print(f"{args.questions.name}: {len(questions)} questions, corpus {corpus}; stepwise policy {policy}")
    print("| method | R@2 | R@5 | calls / question | tokens / question (median / mean) | ms / question (median) |")
    print("|---|---|---|---|---|---|")
    print(_row("stepwise (search_units, expand_entity, get_chunks)", walked, golds))
    print(_row("q_iter (defaults, compact)", single, golds))
    for name, tallies in (("stepwise", walked), ("q_iter", single)):
        shares = {tool: statistics.mean(t.by_tool.get(tool, 0) for t in tallies) for tool in tallies[0].by_tool}
        print(f"{name} mean tokens per question by tool: " + ", ".join(f"{k} {v:.0f}" for k, v in shares.items()))
    if args.out:
        rows = [
            {"question": q.question, "gold": q.gold_doc_ids, "stepwise": w.docs[:5], "q_iter": s.docs[:5]}
            for q, w, s in zip(questions, walked, single, strict=True)
        ]
        args.out.write_text(json.dumps(rows, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--corpus-file", type=Path, required=True, help="The corpus file the index was built from.")
    parser.add_argument("--corpus", help="Corpus name (default: the one `cuerag eval` gives the corpus file).")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--k", type=int, default=5, help="Statements from search_units.")
    parser.add_argument("--hops", type=int, default=1, help="Rounds of expand_entity.")
    parser.add_argument("--beam", type=int, default=3, help="Best paths expanded each round.")
    parser.add_argument("--fanout", type=int, default=2, help="Entities expanded per path.")
    parser.add_argument("--k-hop", type=int, default=3, help="Statements per expand_entity.")
    parser.add_argument("--rank", choices=["mean", "interleave"], default="mean", help="How chunks are ranked.")
    parser.add_argument("--out", type=Path, help="Write each question's ranked documents here (JSON).")
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
