"""CUE-RAG: a multi-partite graph of chunks, knowledge units and entities, and Q-Iter retrieval.

The public names are imported on first use (PEP 562): `import cuerag.cli.app` or a CLI query
answered by a running server (cuerag.engine.sharing) then never loads the engine, its store and
its model code. `from cuerag import CueRag` works as before."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Each public name (`__all__`) and the module that defines it (the imports above, for type checkers).
_HOMES = {
    "AnswerResult": "cuerag.retrieval.answering",
    "ChunkHit": "cuerag.retrieval.results",
    "CorpusInfo": "cuerag.engine.reports",
    "CorpusNotFoundError": "cuerag.errors",
    "CueRag": "cuerag.engine.facade",
    "CueRagError": "cuerag.errors",
    "Document": "cuerag.ingest.documents",
    "Engine": "cuerag.engine.surface",
    "FileOutcome": "cuerag.ingest.folders",
    "IndexReport": "cuerag.index.report",
    "InputError": "cuerag.errors",
    "InvalidNameError": "cuerag.errors",
    "LLMError": "cuerag.errors",
    "LLMUsage": "cuerag.llm.client",
    "ModelLoadError": "cuerag.errors",
    "ParameterError": "cuerag.errors",
    "QIterParams": "cuerag.config",
    "RetrievalResult": "cuerag.retrieval.results",
    "Settings": "cuerag.config",
    "StoreError": "cuerag.errors",
    "WalkRules": "cuerag.ingest.folders",
    "load_paths": "cuerag.index.sync",
    "make_document": "cuerag.ingest.documents",
    "make_params": "cuerag.engine.params",
    "open_engine": "cuerag.engine.sharing",
}

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


# Hidden from type checkers, which see the imports above: a name not among them stays an error
# to them, not an `Any`.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module 'cuerag' has no attribute {name!r}")
        return getattr(importlib.import_module(home), name)

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
