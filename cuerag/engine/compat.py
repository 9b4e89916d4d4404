"""Whether a corpus's stored vectors and this engine's models go together: the vectors' size, the
kind of embedder run that made them (`vectors_stamp`), and how chunk vectors were made."""

from __future__ import annotations

import logging
import threading

from cuerag.config import Settings
from cuerag.errors import StoreError
from cuerag.graph.snapshot import Graph
from cuerag.index.stamps import chunk_vectors_mode, stored_chunk_vectors_mode, stored_vectors_stamp, vectors_stamp
from cuerag.models.loading import Models

log = logging.getLogger(__name__)


class VectorChecks:
    """The checks, with the set of corpora already warned about (a warning is given once per corpus)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._warned: set[str] = set()

    @staticmethod
    def dim(corpus: str, stored: int, models: Models) -> None:
        """Refuse to embed against a corpus whose vectors have another size than the embedder's."""
        if stored != models.embedder.dim:
            raise StoreError(
                f"corpus {corpus!r} was indexed with {stored}-dimensional vectors but the embedder "
                f"{models.embedder.name!r} gives {models.embedder.dim}; use the embedder it was "
                "built with, or index it again into a new corpus"
            )

    def vectors(self, corpus: str, graph: Graph, models: Models, *, indexing: bool) -> None:
        """Vectors of one corpus come from one kind of embedder run (`vectors_stamp`): adding int8
        vectors to a float corpus, or the reverse, is refused. A query embedded by the other kind
        still finds the right neighbours (the two agree to within about 1e-2 in cosine), so it is
        answered, with a warning once per corpus."""
        current = vectors_stamp(models)
        stored = stored_vectors_stamp(graph, models)
        if stored == current:
            return
        fix = "set CUERAG_EMBEDDER_BACKEND / CUERAG_PRECISION as when it was built, or index it into a new corpus"
        if indexing:
            raise StoreError(f"corpus {corpus!r} holds vectors made by {stored}, this engine makes {current}; {fix}")
        with self._lock:
            if corpus in self._warned:
                return
            self._warned.add(corpus)
        log.warning("corpus %r holds vectors made by %s, queries are embedded by %s; %s", corpus, stored, current, fix)

    @staticmethod
    def chunk_vectors(corpus: str, graph: Graph, settings: Settings, models: Models) -> None:
        """Chunk vectors of one corpus are made one way (`chunk_vectors`): embedded and derived
        ones score alike only roughly, so indexing into a corpus made the other way is refused.
        Queries are embedded the same way under both, so querying is not affected."""
        stored = stored_chunk_vectors_mode(graph)
        current = chunk_vectors_mode(settings, models)
        if stored is not None and stored != current:
            raise StoreError(
                f"corpus {corpus!r} holds chunk vectors made {stored}, this engine makes them {current}; "
                f"set CUERAG_CHUNK_VECTORS={stored} as when it was built, or index it into a new corpus"
            )
