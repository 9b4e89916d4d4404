"""CUE-RAG: a multi-partite graph of chunks, knowledge units and entities, and Q-Iter retrieval."""

from cuerag.config import QIterParams, Settings
from cuerag.documents import Document, load_paths, make_document
from cuerag.engine import CorpusInfo, CueRag, make_params
from cuerag.errors import (
    CorpusNotFoundError,
    CueRagError,
    InputError,
    InvalidNameError,
    ModelLoadError,
    ParameterError,
    StoreError,
)
from cuerag.index import IndexReport
from cuerag.retrieval import ChunkHit, RetrievalResult

__all__ = [
    "ChunkHit",
    "CorpusInfo",
    "CorpusNotFoundError",
    "CueRag",
    "CueRagError",
    "Document",
    "IndexReport",
    "InputError",
    "InvalidNameError",
    "ModelLoadError",
    "ParameterError",
    "QIterParams",
    "RetrievalResult",
    "Settings",
    "StoreError",
    "load_paths",
    "make_document",
    "make_params",
]
