"""Load test of the MCP server over streamable HTTP on loopback.

    .venv/bin/python benchmarks/mcp_http_load.py --data-dir DIR --corpus NAME [--clients 8] [--calls 100]

Starts `cuerag-mcp --transport http` on 127.0.0.1 with a bearer token against an existing index,
then runs N concurrent MCP clients, each making M `q_iter` calls with questions built from the
corpus's titles. Reports errors, client-side latency (p50/p95/p99), the engine's own time for the
same calls (`elapsed_ms` in each result) and the difference: what MCP, HTTP and JSON add per call.
Only loopback traffic; bounded in count and time.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import numpy as np
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from cuerag.evaluation.bench import make_queries


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(port: int, proc: subprocess.Popen[bytes], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError("server did not start")


async def _client(url: str, token: str, corpus: str, questions: list[str], out: dict[str, list[float]]) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        await client.list_tools()
        for q in questions:
            t0 = time.perf_counter()
            try:
                result = await client.call_tool("q_iter", {"corpus": corpus, "query": q})
            except Exception:
                out["errors"].append(1.0)
                continue
            total = (time.perf_counter() - t0) * 1000
            if result.is_error or not result.structured_content:
                out["errors"].append(1.0)
                continue
            engine = float(result.structured_content["elapsed_ms"])
            out["client"].append(total)
            out["engine"].append(engine)
            out["overhead"].append(total - engine)


def _pct(values: list[float]) -> str:
    if not values:
        return "n/a"
    a = np.asarray(values)
    return ", ".join(f"p{p} {np.percentile(a, p):.1f}" for p in (50, 95, 99))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", required=True, type=Path)
    parser.add_argument("--corpus", required=True)
    parser.add_argument(
        "--titles-from", type=Path, default=Path("../shared/data/2wikimultihopqa/2wikimultihopqa_corpus.json")
    )
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()

    from cuerag.index.sync import load_paths

    titles = [d.title for d in load_paths([args.titles_from]) if d.title]
    token = secrets.token_hex(16)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUERAG_")}
    cmd = [sys.executable, "-m", "server.main", "--transport", "http", "--port", str(port), "--token", token]
    cmd += ["--data-dir", str(args.data_dir), "--read-only"]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.DEVNULL)
    try:
        _wait_for(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        out: dict[str, list[float]] = {"client": [], "engine": [], "overhead": [], "errors": []}
        questions = make_queries(titles, args.clients * args.calls, seed=11)

        async def run_all() -> float:
            t0 = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for i in range(args.clients):
                    batch = questions[i * args.calls : (i + 1) * args.calls]
                    tg.start_soon(_client, url, token, args.corpus, batch, out)
            return time.perf_counter() - t0

        wall = anyio.run(run_all)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    calls = args.clients * args.calls
    print(f"{args.clients} clients x {args.calls} q_iter calls over streamable HTTP (loopback), corpus {args.corpus}")
    print(f"- errors: {len(out['errors'])} of {calls}; wall {wall:.1f} s; {calls / wall:.1f} calls/s")
    print(f"- client latency ms: {_pct(out['client'])}")
    print(f"- engine time ms (elapsed_ms of the same calls): {_pct(out['engine'])}")
    print(f"- MCP + HTTP overhead ms (client - engine): {_pct(out['overhead'])}")


if __name__ == "__main__":
    main()
