"""What one index run will write, before its vectors are computed: the new chunks and their
documents (`Pieces`), then the points with their payloads and what they replace (`RunPlan`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cuerag.graph.schema import ProvenancePayload
from cuerag.store.base import StoredPoint
from cuerag.text.chunk import TextChunk


@dataclass
class Pieces:
    """The chunks of one run's documents: all of them (for selection) and the new ones."""

    run_pieces: list[tuple[TextChunk, str]] = field(default_factory=list)
    new: list[tuple[TextChunk, str]] = field(default_factory=list)
    doc_of: dict[str, str] = field(default_factory=dict)  # new chunk id -> document id
    provenance: dict[str, ProvenancePayload] = field(default_factory=dict)  # document id -> where it came from
    source_of: dict[str, str | None] = field(default_factory=dict)  # new chunk id -> document source


@dataclass
class RunPlan:
    """The points one run will write, before their vectors are computed."""

    chunks: list[StoredPoint] = field(default_factory=list)
    chunk_texts: list[str] = field(default_factory=list)
    # What a derived chunk vector is made of (cuerag.index.chunk_vectors), per new chunk: its head and
    # its sentences in order, or None for a chunk whose units came from the LLM (embedded whole).
    chunk_parts: list[tuple[str, list[str]] | None] = field(default_factory=list)
    unit_texts: dict[str, str] = field(default_factory=dict)  # id -> text, new units only
    unit_entities: dict[str, list[str]] = field(default_factory=dict)
    entities: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (name, label), new only
    kept_entities: set[str] = field(default_factory=set)  # existing entities the new units mention
    stale_chunks: list[str] = field(default_factory=list)
    # Chunks of unchanged documents that now come from another file or file version, or whose
    # document's metadata changed: rewritten with their stored vector and the new labels, nothing
    # embedded.
    refreshed: list[StoredPoint] = field(default_factory=list)
    # Unchanged chunks of replaced documents: stored again, vector as is, as part of the new
    # version (its labels, its file's provenance and metadata). Chunk id -> those labels.
    relabelled: dict[str, dict[str, object]] = field(default_factory=dict)
    versions: dict[str, tuple[str, int]] = field(default_factory=dict)  # doc id -> (version, chunks)
