"""The stamps that say how a corpus's vectors were made (the embedder run, chunk vectors embedded or
derived, the chunk shape), compared before a run adds to a corpus or a query reads it."""

from __future__ import annotations

from cuerag.config import Settings
from cuerag.graph.schema import chunk_payload
from cuerag.graph.snapshot import Graph
from cuerag.index.chunk_vectors import DERIVED, EMBEDDED
from cuerag.models.base import mean_pooling
from cuerag.models.loading import Models


def vectors_stamp(models: Models) -> str:
    """How this engine's vectors are made, as stored on every chunk (`embedder`, `vectors`)."""
    return f"{models.embedder.name} ({models.embedder_run.vectors})"


def chunk_vectors_mode(settings: Settings, models: Models) -> str:
    """How this engine makes chunk vectors: derived where asked and the embedder pools by mean."""
    if settings.chunk_vectors == DERIVED and mean_pooling(models.embedder) is not None:
        return DERIVED
    return EMBEDDED


def stored_chunk_vectors_mode(graph: Graph) -> str | None:
    """How a corpus's chunk vectors were made, from any of its chunks (None when it has none).
    Chunks stored before the setting existed were embedded."""
    if graph.points is None or not graph.points.chunks:
        return None
    return str(chunk_payload(next(iter(graph.points.chunks.values()))).get("chunk_vectors", EMBEDDED))


def stored_vectors_stamp(graph: Graph, models: Models) -> str:
    """How a corpus's vectors were made, from any of its chunks. Chunks stored before the stamp
    existed were made by the torch embedder in float, under the embedder configured now."""
    if graph.points is None or not graph.points.chunks:
        return vectors_stamp(models)
    payload = chunk_payload(next(iter(graph.points.chunks.values())))
    return f"{payload.get('embedder', models.embedder.name)} ({payload.get('vectors', 'float')})"


def chunk_variant(settings: Settings) -> str:
    """The index settings that shape a chunk's payload beyond its text: part of its id."""
    return "title-entities" if settings.title_entities else ""


def index_shape(settings: Settings) -> str:
    """Every index setting that decides what a file's chunks are. It goes into a file's stored
    hash (cuerag.index.sync), so that changing one re-reads the files instead of skipping them."""
    return f"{settings.chunk_tokens}:{settings.chunk_overlap}:{chunk_variant(settings)}"
