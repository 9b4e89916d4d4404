"""CUE-RAG: a multi-partite graph of chunks, knowledge units and entities, and Q-Iter retrieval."""

from cuerag.answering import AnswerResult
from cuerag.config import QIterParams, Settings
from cuerag.documents import Document, make_document
from cuerag.engine import CorpusInfo, CueRag, make_params
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
from cuerag.folders import FileOutcome, WalkRules
from cuerag.index import IndexReport
from cuerag.llm import LLMUsage
from cuerag.results import ChunkHit, RetrievalResult
from cuerag.sync import load_paths

__all__ = [
    "AnswerResult",
    "ChunkHit",
    "CorpusInfo",
    "CorpusNotFoundError",
    "CueRag",
    "CueRagError",
    "Document",
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
]
