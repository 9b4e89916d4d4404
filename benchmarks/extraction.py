"""Is extraction the bottleneck of indexing? Per format: the time to read and extract a folder's
files, against the time to embed what they yield (the chunks and the sentence units that
`cuerag index` embeds), with the configured embedder on this machine.

    .venv/bin/python benchmarks/extraction.py FOLDER [FOLDER ...] [--embed-sample 400]

Embedding is timed on a sample of each format's chunks and units (`--embed-sample` texts of
each kind) and scaled to all of them, so a large folder costs minutes, not hours. Prints one row
per format: files, pages (PDF), characters, extraction seconds, estimated embedding seconds and
their ratio.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import defaultdict
from pathlib import Path

from cuerag import Settings
from cuerag.errors import InputError
from cuerag.ingest.documents import Document, load_file
from cuerag.ingest.formats import DOCUMENT_SUFFIXES
from cuerag.models.loading import load_models
from cuerag.text.chunking import chunk_document
from cuerag.text.tools import TextTools


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--embed-sample", type=int, default=400, help="Texts of each kind embedded per format.")
    args = parser.parse_args()
    settings = Settings()
    text = TextTools()

    docs: dict[str, list[Document]] = defaultdict(list)
    seconds: dict[str, float] = defaultdict(float)
    failed: dict[str, int] = defaultdict(int)
    for folder in args.folders:
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES):
            kind = path.suffix.lower().lstrip(".")
            started = time.perf_counter()
            try:
                docs[kind].extend(load_file(path, root=folder))
            except InputError:
                failed[kind] += 1
            seconds[kind] += time.perf_counter() - started

    models = load_models(settings)
    models.embedder.encode(["warm up"], batch_size=1)
    rng = random.Random(0)
    header = f"{'format':<8}{'files':>7}{'failed':>7}{'pages':>7}{'chars':>12}{'extract s':>11}"
    print(header + f"{'chunks':>8}{'units':>8}{'embed s':>10}{'embed/extract':>15}")
    for kind in sorted(docs):
        chunks = [
            c.full_text
            for d in docs[kind]
            for c in chunk_document(text, d, max_tokens=settings.chunk_tokens, overlap=settings.chunk_overlap)
        ]
        units = [u for c in chunks for u in text.sentences(c)]
        embed = 0.0
        for texts in (chunks, units):
            sample = rng.sample(texts, min(args.embed_sample, len(texts)))
            if not sample:
                continue
            started = time.perf_counter()
            models.embedder.encode(sample, batch_size=settings.embed_batch_size)
            embed += (time.perf_counter() - started) * len(texts) / len(sample)
        pages = sum(len(d.structure.pages) for d in docs[kind] if d.structure is not None)
        chars = sum(len(d.text) for d in docs[kind])
        ratio = embed / seconds[kind] if seconds[kind] else float("inf")
        print(
            f"{kind:<8}{len(docs[kind]):>7}{failed[kind]:>7}{pages:>7}{chars:>12,}{seconds[kind]:>11.2f}"
            f"{len(chunks):>8}{len(units):>8}{embed:>10.1f}{ratio:>15.1f}"
        )


if __name__ == "__main__":
    main()
