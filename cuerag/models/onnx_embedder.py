"""A sentence-transformers model run by ONNX Runtime, in float32 or with int8 weights.

The ONNX graph is exported here, from the weights already on disk (no hub), with torch's own
exporter, and int8 is ONNX Runtime's dynamic quantization (weights per output channel,
activations quantized on the fly). Both files are cached under `<data_dir>/onnx/`, in a folder
named by what makes them valid (the model's files, torch and onnxruntime versions), so the
export costs seconds once per machine and model. Pooling and normalisation are the model's own
(mean or CLS pooling, then L2), done on the transformer's output here.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from cuerag.errors import ModelLoadError
from cuerag.models.base import Pooled, normalise, pooling_mode

log = logging.getLogger(__name__)

OnnxPrecision = Literal["float32", "int8"]
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _fingerprint(model_dir: Path | None, *versions: str) -> str:
    """A name for the exported files: the source model's files (name, size, mtime) and the
    versions of the tools that made and run them."""
    h = hashlib.sha256()
    for f in sorted(p for p in model_dir.rglob("*") if p.is_file()) if model_dir is not None else []:
        st = f.stat()
        h.update(f"{f.name}:{st.st_size}:{int(st.st_mtime)}\n".encode())
    for v in versions:
        h.update(v.encode())
    return h.hexdigest()[:16]


def _atomic(target: Path, make: Any) -> None:
    """Run `make(tmp_path)` and move the result into place, so that a killed export or two
    engines exporting at once never leave a half-written model behind."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        make(tmp)
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)


def _export_float32(transformer: Any, target: Path) -> None:
    import torch

    inputs = transformer.tokenizer(["export"], return_tensors="pt")
    names = [n for n in _INPUTS if n in inputs]
    axes = {n: {0: "batch", 1: "tokens"} for n in names} | {"last_hidden_state": {0: "batch", 1: "tokens"}}
    inner = transformer.auto_model.eval()

    class ByName(torch.nn.Module):
        """The transformer called by keyword (its positional order differs across versions),
        returning only the hidden states that pooling needs."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *args: torch.Tensor) -> torch.Tensor:
            return self.inner(**dict(zip(names, args, strict=True))).last_hidden_state

    model = ByName()

    def make(path: Path) -> None:
        with torch.no_grad():
            torch.onnx.export(
                model,
                tuple(inputs[n] for n in names),
                str(path),
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )

    _atomic(target, make)


def _quantize_int8(source: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    _atomic(
        target,
        lambda path: quantize_dynamic(str(source), str(path), per_channel=True, weight_type=QuantType.QInt8),
    )


class OnnxEmbedder:
    """Texts to L2-normalised float32 vectors with ONNX Runtime on the CPU."""

    backend = "onnx"

    def __init__(
        self,
        name: str,
        model_path: str,
        *,
        cache_dir: Path,
        precision: OnnxPrecision,
        threads: int,
        writable: bool = True,
    ) -> None:
        try:
            import onnxruntime as ort
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ModelLoadError(
                f"embedder_backend 'onnx' needs onnxruntime and onnx: pip install 'cuerag[onnx]' ({exc})"
            ) from exc
        try:
            st = SentenceTransformer(model_path, device="cpu")
        except Exception as exc:  # the library raises many kinds; all mean "cannot load"
            raise ModelLoadError(f"cannot load embedder {name!r}: {exc}") from exc
        transformer, pooling = _modules(name, st)
        self.name = name
        self.precision: str = precision
        get_dim = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
        dim = get_dim()
        if dim is None:
            raise ModelLoadError(f"embedder {name!r} does not report its embedding dimension")
        self.dim = int(dim)
        self._tokenizer = transformer.tokenizer
        self.max_tokens = int(st.max_seq_length or 512)
        self.pooling = pooling
        source = Path(model_path)
        stamp = _fingerprint(source if source.is_dir() else None, model_path, torch.__version__, ort.__version__)
        safe_name = re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:60]
        folder = cache_dir / f"{safe_name}-{stamp}"
        f32 = folder / "model-float32.onnx"
        wanted = f32 if precision == "float32" else folder / "model-int8.onnx"
        if not writable and not wanted.exists():
            # A read-only data directory: export for this process only.
            self._scratch = tempfile.TemporaryDirectory(prefix="cuerag-onnx-")
            folder = Path(self._scratch.name)
            f32 = folder / "model-float32.onnx"
        folder.mkdir(parents=True, exist_ok=True)
        if not f32.exists():
            log.info("exporting %s to ONNX in %s", name, folder)
            _export_float32(transformer, f32)
        path = f32
        if precision == "int8":
            path = folder / "model-int8.onnx"
            if not path.exists():
                _quantize_int8(f32, path)
        self._path = path
        self.set_threads(threads)

    def set_threads(self, threads: int) -> None:
        """(Re)open the session with this many intra-op threads (fixed when a session opens)."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(str(self._path), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        if self.pooling == "mean":
            return self.pooled(texts, batch_size=batch_size).vectors
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for rows, hidden, _ in self._batches(texts, batch_size):
            out[rows] = hidden[:, 0]  # CLS pooling
        return normalise(out)

    def pooled(self, texts: Sequence[str], *, batch_size: int = 64) -> Pooled:
        """Token vectors summed per text, and their counts (mean pooling before the division)."""
        sums = np.zeros((len(texts), self.dim), dtype=np.float32)
        counts = np.zeros(len(texts), dtype=np.float32)
        for rows, hidden, mask in self._batches(texts, batch_size):
            sums[rows] = (hidden * mask[..., None]).sum(axis=1)
            counts[rows] = mask.sum(axis=1)
        return Pooled(sums, counts)

    def _batches(self, texts: Sequence[str], batch_size: int) -> Iterator[tuple[list[int], np.ndarray, np.ndarray]]:
        """(rows, last hidden states, attention mask) per batch, batches of similar length so
        that little of each is padding."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            enc = self._tokenizer(
                [texts[i] for i in rows], padding=True, truncation=True, max_length=self.max_tokens, return_tensors="np"
            )
            feeds = {n: enc[n].astype(np.int64) for n in _INPUTS if n in self._inputs}
            (hidden,) = self._session.run(["last_hidden_state"], feeds)
            yield rows, hidden, enc["attention_mask"].astype(np.float32)


def _modules(name: str, st: Any) -> tuple[Any, str]:
    """The model's transformer module and pooling mode, refused unless the pipeline is the plain
    one this class reproduces (`pooling_mode`)."""
    mode = pooling_mode(st)
    if mode is None:
        raise ModelLoadError(
            f"embedder {name!r} is not a plain Transformer + mean/CLS Pooling model; "
            "use the torch backend for it (CUERAG_EMBEDDER_BACKEND=torch)"
        )
    # The vectors are L2-normalised whether or not the model ends in Normalize (the Embedder contract).
    return st[0], mode
