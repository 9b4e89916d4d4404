"""CUE-RAG: a multi-partite graph of chunks, knowledge units and entities, and Q-Iter retrieval."""

from cuerag.config import QIterParams, Settings
from cuerag.engine.facade import CueRag
from cuerag.engine.params import make_params
from cuerag.engine.reports import CorpusInfo
from cuerag.engine.sharing import open_engine
from cuerag.engine.surface import Engine
from cuerag.errors import (
    CorpusNotFoundError,
    CueRagError,
    InputError,
    InvalidNameError,
    LLMError,
    ModelLoadError,
    ParameterError,
    StoreError,
)
from cuerag.index.report import IndexReport
from cuerag.index.sync import load_paths
from cuerag.ingest.documents import Document, make_document
from cuerag.ingest.folders import FileOutcome, WalkRules
from cuerag.llm.client import LLMUsage
from cuerag.retrieval.answering import AnswerResult
from cuerag.retrieval.results import ChunkHit, RetrievalResult

__all__ = [
    "AnswerResult",
    "ChunkHit",
    "CorpusInfo",
    "CorpusNotFoundError",
    "CueRag",
    "CueRagError",
    "Document",
    "Engine",
    "FileOutcome",
    "IndexReport",
    "InputError",
    "InvalidNameError",
    "LLMError",
    "LLMUsage",
    "ModelLoadError",
    "ParameterError",
    "QIterParams",
    "RetrievalResult",
    "Settings",
    "StoreError",
    "WalkRules",
    "load_paths",
    "make_document",
    "make_params",
    "open_engine",
]
