"""What one index run will write, before its vectors are computed: the new chunks and their
documents (`Pieces`), then the points with their payloads and what they replace (`RunPlan`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cuerag.graph.schema import ProvenancePayload
from cuerag.index.doc_versions import DocVersion
from cuerag.store.base import StoredPoint
from cuerag.text.chunk import TextChunk


@dataclass
class Pieces:
    """The chunks of one run's documents: all of them (for selection) and the new ones."""

    run_pieces: list[tuple[TextChunk, str]] = field(default_factory=list)
    new: list[tuple[TextChunk, str]] = field(default_factory=list)
    doc_of: dict[str, str] = field(default_factory=dict)  # new chunk id -> document id
    key_of: dict[str, str] = field(default_factory=dict)  # new chunk id -> its content key
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
    # The points of the versions this run replaces: deleted once the new versions are stored.
    stale_chunks: list[str] = field(default_factory=list)
    removed_content: int = 0  # chunks of replaced documents whose text is gone
    # Chunks of the new versions whose content is stored already: (stored point, new point id,
    # document id, the chunk's labels now). Stored again under the new id, vector as is.
    copied: list[tuple[StoredPoint, str, str, dict[str, object]]] = field(default_factory=list)
    versions: dict[str, DocVersion] = field(default_factory=dict)  # doc id -> the version it gets
