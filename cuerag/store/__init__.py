"""Vector stores: one small contract, three backends (qdrant-edge in-process, qdrant-client local
mode, a Qdrant server by URL), chosen in one place by `open_store`."""

from __future__ import annotations

from cuerag.config import Settings
from cuerag.store.base import Hit, PointFilter, StoredPoint, VectorStore


def open_store(settings: Settings) -> VectorStore:
    """The store the settings name: a server when `qdrant_url` is set, else the embedded engine."""
    if settings.qdrant_url:
        from cuerag.store.qdrant_client_store import QdrantClientStore

        key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        return QdrantClientStore.remote(settings.qdrant_url, api_key=key)
    if not settings.read_only:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    if settings.store == "local":
        from cuerag.store.qdrant_client_store import QdrantClientStore

        return QdrantClientStore.local(settings.data_dir / "qdrant-local")
    from cuerag.store.edge_store import EdgeStore

    return EdgeStore(settings.data_dir / "qdrant-edge", read_only=settings.read_only)


__all__ = ["Hit", "PointFilter", "StoredPoint", "VectorStore", "open_store"]
