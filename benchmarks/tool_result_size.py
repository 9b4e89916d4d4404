"""What the MCP tools cost an agent's context window: cl100k tokens per `q_iter` result and the
size of `tools/list`.

    .venv/bin/python benchmarks/tool_result_size.py --data-dir DIR --corpus NAME \
        --questions ../shared/data/hotpotqa/hotpotqa_train100.json [--limit 20] [--detail compact|full]
    .venv/bin/python benchmarks/tool_result_size.py --data-dir DIR --corpus wiki \
        --titles-from ../shared/data/2wikimultihopqa/2wikimultihopqa_corpus.json --limit 50

The 2Wiki corpus file has no questions: `--titles-from` builds them from its titles with 2Wiki's
question shapes (`cuerag.evaluation.bench.make_queries`, as `cuerag bench` and `mcp_http_load.py` do).

Serves the index read-only through the real MCP server and an in-memory SDK client, lists the
tools, then calls `q_iter` at its defaults on the first `--limit` questions. Reports the bytes of
the `tools/list` result (the whole, and each tool's share), and for the results the tokens of the
text content (what most clients show the model), of the structured content (the JSON), and of the
two together (what a client that forwards both sends): median, mean and maximum. Runs against
servers without a `detail` parameter too, so the same script measures before and after.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from cuerag import Settings, load_paths
from cuerag.evaluation.bench import make_queries
from cuerag.text.tools import TextTools
from server.app import build_server
from server.config import ServerSettings


def _tokens(enc: Any, text: str) -> int:
    return len(enc.encode(text, disallowed_special=()))


def _summary(values: list[int]) -> str:
    return f"median {statistics.median(values):.0f}, mean {statistics.mean(values):.0f}, max {max(values)}"


async def list_size(data_dir: Path) -> int:
    """Bytes of `tools/list` from a server with every tool (write tools included, no LLM)."""
    server = build_server(Settings(data_dir=data_dir), ServerSettings(read_only=False, allowed_roots=[]))
    async with Client(server) as client:
        listed = await client.list_tools()
        return len(listed.model_dump_json(by_alias=True, exclude_none=True).encode())


async def measure(data_dir: Path, corpus: str, questions: list[str], detail: str | None) -> None:
    enc = TextTools().encoding
    print(f"tools/list (all tools, no LLM): {await list_size(data_dir)} bytes")
    server = build_server(Settings(data_dir=data_dir), ServerSettings(read_only=True))
    async with Client(server) as client:
        listed = await client.list_tools()
        # As on the wire: the SDK's JSON (compact, UTF-8, no nulls).
        size = len(listed.model_dump_json(by_alias=True, exclude_none=True).encode())
        print(f"tools/list (read-only server): {size} bytes, {len(listed.tools)} tools")
        for tool in listed.tools:
            whole = len(tool.model_dump_json(by_alias=True, exclude_none=True).encode())
            schema = len(json.dumps(tool.output_schema, separators=(",", ":")).encode()) if tool.output_schema else 0
            print(f"  {tool.name:<16} {whole:>6} bytes, output schema {schema:>6}")
        q_iter = next(t for t in listed.tools if t.name == "q_iter")
        takes_detail = "detail" in q_iter.input_schema.get("properties", {})
        text, structured, both, wire = [], [], [], []
        for question in questions:
            args: dict[str, Any] = {"corpus": corpus, "query": question}
            if detail is not None and takes_detail:
                args["detail"] = detail
            result = await client.call_tool("q_iter", args)
            if result.is_error:
                raise SystemExit(f"q_iter failed on {question!r}: {result.content}")
            t = sum(_tokens(enc, c.text) for c in result.content if c.type == "text")
            s = _tokens(enc, json.dumps(result.structured_content, ensure_ascii=False))
            # As the SDK sends it: compact separators (the figure above keeps the earlier measure).
            wire.append(_tokens(enc, json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))))
            text.append(t)
            structured.append(s)
            both.append(t + s)
        shown = detail if takes_detail else "(no detail parameter)"
        print(f"q_iter at defaults, detail {shown}, {len(questions)} questions, cl100k tokens:")
        print(f"  text content:       {_summary(text)}")
        print(f"  structured content: {_summary(structured)}")
        print(f"  structured, compact JSON as sent: {_summary(wire)}")
        print(f"  both:               {_summary(both)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--corpus", required=True)
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument("--questions", type=Path, help="A HotpotQA, 2Wiki or MuSiQue question file.")
    given.add_argument("--titles-from", type=Path, help="A corpus file whose titles the questions are built from.")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--detail", choices=["compact", "full"], default=None, help="Default: the server's default.")
    args = parser.parse_args()
    if args.questions is not None:
        # HotpotQA, 2Wiki and MuSiQue files are lists of records with a "question".
        questions = [r["question"] for r in json.loads(args.questions.read_text())][: args.limit]
    else:
        titles = [d.title for d in load_paths([args.titles_from]) if d.title]
        questions = make_queries(titles, args.limit, seed=11)
    anyio.run(measure, args.data_dir, args.corpus, questions, args.detail)


if __name__ == "__main__":
    main()
