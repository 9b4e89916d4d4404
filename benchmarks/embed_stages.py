"""Where an index run's embedding time goes: chunks, units and entities of the first N 2Wiki
passages, made as `cuerag index` makes them (its chunking, sentence splitting, NER and title
entities), each kind embedded by the engine's embedder as the indexer calls it (sorted by length,
slices of 512, batch 64). Prints texts, tokens (the model's, specials included), padding and
seconds per kind, entities again at larger batches, and how close chunk vectors derived from
their units' pooled sums (`chunk_vectors=derived`) come to the embedded ones.

    OMP_NUM_THREADS=1 python benchmarks/embed_stages.py --passages 1000

`--data-dir` holds the precision calibration (a fresh temporary one by default, which pays it).
Prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from cuerag.config import Settings
from cuerag.graph.ids import entity_point_id, unit_point_id
from cuerag.index.chunk_vectors import derive_chunk_vectors, stacked
from cuerag.ingest.documents import Document
from cuerag.models.base import mean_pooling
from cuerag.models.embedders import _model_path
from cuerag.models.loading import load_embedder
from cuerag.models.ner import SpacyNer
from cuerag.models.precision import read_cpuinfo
from cuerag.text.chunking import chunk_document
from cuerag.text.tools import TextTools

CORPUS = Path("../shared/data/2wikimultihopqa/2wikimultihopqa_corpus.json")
SLICE = 512


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--passages", type=int, default=1000)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--entity-batches", default="64,256,1024")
    args = parser.parse_args()

    settings = Settings(data_dir=args.data_dir or Path(tempfile.mkdtemp(prefix="embed-stages-")))
    records = json.loads(args.corpus.read_text())[: args.passages]
    docs = [Document(id=str(i), title=r["title"], text=r["text"]) for i, r in enumerate(records)]
    tools = TextTools()
    chunks = [
        c
        for d in docs
        for c in chunk_document(tools, d, max_tokens=settings.chunk_tokens, overlap=settings.chunk_overlap)
    ]
    chunk_units = [tools.sentences(c.unit_text) for c in chunks]
    units = list({unit_point_id(u): u for us in chunk_units for u in us}.values())
    ner = SpacyNer(settings.ner_model, labels=settings.entity_labels)
    started = time.perf_counter()
    mentions = ner.extract(units)
    ner_s = time.perf_counter() - started
    entities = {entity_point_id(c.title): c.title for c in chunks if c.title}
    for found in mentions:
        entities.update({entity_point_id(s): s.strip() for s, _ in found})
    texts = {"chunks": [c.full_text for c in chunks], "units": units, "entities": list(entities.values())}

    embedder, run = load_embedder(settings)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(_model_path(settings.embedder))
    cpu = read_cpuinfo()
    print(f"# Embedding per kind: the first {len(records)} 2Wiki passages\n")
    print(f"CPU: {cpu.model}; embedder {run.backend} {run.precision} ({run.reason}); NER {ner_s:.1f} s\n")
    print("| kind | texts | tokens | mean tokens | padding (sorted, batch 64) | seconds | tokens/s |")
    print("|---|---|---|---|---|---|---|")
    vectors: dict[str, np.ndarray] = {}
    for kind, items in texts.items():
        lengths = _lengths(tokenizer, items)
        started = time.perf_counter()
        vectors[kind] = _embed(embedder, items, batch=settings.embed_batch_size)
        spent = time.perf_counter() - started
        print(
            f"| {kind} | {len(items)} | {sum(lengths)} | {np.mean(lengths):.1f} | {_padding(lengths, 64):.1%} | "
            f"{spent:.2f} | {sum(lengths) / spent:.0f} |"
        )
    print()
    for batch in [int(b) for b in args.entity_batches.split(",")]:
        started = time.perf_counter()
        _embed(embedder, texts["entities"], batch=batch)
        print(f"- entities at batch {batch}: {time.perf_counter() - started:.2f} s")
    print()

    pooler = mean_pooling(embedder)
    if pooler is None:
        print("The embedder does not pool by mean: chunk vectors cannot be derived.")
        return
    started = time.perf_counter()
    unit_parts = pooler.pooled(units, batch_size=settings.embed_batch_size)
    pooled_s = time.perf_counter() - started
    heads = sorted({c.head for c in chunks if c.head})
    started = time.perf_counter()
    head_parts = pooler.pooled(heads, batch_size=settings.embed_batch_size)
    heads_s = time.perf_counter() - started
    row = {unit_point_id(u): i for i, u in enumerate(units)}
    head_row = {h: len(units) + i for i, h in enumerate(heads)}
    both = stacked(unit_parts, head_parts)
    cos_units = np.sum(unit_parts.vectors * vectors["units"], axis=1)
    print(
        f"Units' token sums: {pooled_s:.2f} s (their vectors come with them: cosine to `encode`'s min "
        f"{cos_units.min():.4f}); heads ({len(heads)}): {heads_s:.2f} s\n"
    )
    print("| derived from | cosine to embedded chunk: min | p5 | median |")
    print("|---|---|---|---|")
    variants = {
        "units + head": (True, None),
        "units + head, first max_tokens": (True, pooler.max_tokens),
        "units only": (False, None),
    }
    for name, (with_head, limit) in variants.items():
        parts = [
            ([head_row[c.head]] if with_head and c.head else []) + [row[unit_point_id(u)] for u in us]
            for c, us in zip(chunks, chunk_units, strict=True)
        ]
        cos = np.sum(derive_chunk_vectors(parts, both, max_tokens=limit) * vectors["chunks"], axis=1)
        print(f"| {name} | {cos.min():.4f} | {np.percentile(cos, 5):.4f} | {np.median(cos):.4f} |")


def _lengths(tokenizer: object, texts: list[str]) -> list[int]:
    ids = tokenizer(texts, truncation=True, max_length=256)["input_ids"]  # type: ignore[operator]
    return [len(i) for i in ids]


def _padding(lengths: list[int], batch: int) -> float:
    ordered = sorted(lengths)
    slots = sum(max(ordered[s : s + batch]) * len(ordered[s : s + batch]) for s in range(0, len(ordered), batch))
    return 1 - sum(ordered) / slots


def _embed(embedder: object, texts: list[str], *, batch: int) -> np.ndarray:
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)  # type: ignore[attr-defined]
    for start in range(0, len(texts), SLICE):
        rows = order[start : start + SLICE]
        out[rows] = embedder.encode([texts[i] for i in rows], batch_size=batch)  # type: ignore[attr-defined]
    return out


if __name__ == "__main__":
    main()
