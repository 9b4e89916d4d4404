"""The models behind small interfaces: an embedder, a text reranker and NER.

Each is loaded once (by `load_models`) and shared by indexing and retrieval. Heavy imports happen
inside the loaders so that importing the engine stays cheap.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from cuerag.config import Settings
from cuerag.models.base import Embedder, EntityRecognizer, TextReranker
from cuerag.models.embedders import FlagEmbedder, SentenceTransformerEmbedder, _model_path
from cuerag.models.ner import SpacyNer
from cuerag.models.precision import (
    CALIBRATION_FILE,
    CalibrationCache,
    PrecisionChoice,
    calibrate,
    calibration_key,
    calibration_texts,
    choose_precision,
    read_cpuinfo,
)
from cuerag.models.rerankers import CrossEncoderReranker, EmbedderReranker, FlagRerankerAdapter

log = logging.getLogger(__name__)


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
    since int8 lowered R@5 on two of three benchmark sets by more than 0.005 (docs/performance.md)."""
    from cuerag.models.onnx_embedder import OnnxEmbedder, OnnxPrecision

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
    # transformers draws a "Loading weights" bar on stderr for the second it takes to read local
    # weights: noise between the CLI's own progress lines. Read when transformers is first imported,
    # which is below (the model modules import it on first use); set it to 0 to see the bars.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    embedder, run = load_embedder(settings)
    log.info(
        "embedder %s loaded (dim %d, %s %s: %s)", embedder.name, embedder.dim, run.backend, run.precision, run.reason
    )
    reranker = load_reranker(settings, embedder)
    ner = SpacyNer(settings.ner_model, labels=settings.entity_labels)
    return Models(embedder=embedder, reranker=reranker, ner=ner, embedder_run=run)
