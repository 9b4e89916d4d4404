"""The default embedded store: qdrant-edge-py, Qdrant's Rust engine in-process, one shard (a
directory) per collection under the data directory."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import wraps
from pathlib import Path
from typing import IO, Any, ParamSpec, TypeVar

import numpy as np
from qdrant_edge import (
    CountRequest,
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeVectorParams,
    FieldCondition,
    Filter,
    HasIdCondition,
    MatchAny,
    Point,
    Query,
    QueryRequest,
    ScrollRequest,
    UpdateOperation,
)

from cuerag.errors import IndexBusy, StoreError
from cuerag.store.base import Hit, PointFilter, StoredPoint
from cuerag.store.disk_errors import disk_error

P = ParamSpec("P")
R = TypeVar("R")


def _named_errors(what: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Store failures (the Rust engine's exceptions, a disk error) as StoreError naming the
    operation and the cause, so that a tool answers with them instead of a bare 'Error executing
    tool' with the cause only in the server's log."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return fn(*args, **kwargs)
            except StoreError:
                raise
            except Exception as exc:
                name = next((a for a in args[1:] if isinstance(a, str)), "")
                target = f" {name!r}" if name else ""
                disk = disk_error(exc, f"{what}{target}")
                if disk is not None:
                    raise disk from exc
                raise StoreError(f"the embedded store could not {what}{target}: {type(exc).__name__}: {exc}") from exc

        return run

    return wrap


_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_CONFIG_FILE = "edge_config.json"


def _vector_of(raw: object) -> np.ndarray | None:
    if raw is None:
        return None
    if isinstance(raw, dict):  # named vectors: ours is the unnamed default ""
        raw = raw.get("")
    return None if raw is None else np.asarray(raw, dtype=np.float32)


def _filter(where: PointFilter | None) -> Filter | None:
    """The filter as qdrant-edge's model (None: no condition)."""
    if where is None:
        return None
    must: list[Any] = []
    if where.doc_ids is not None:
        must.append(FieldCondition(key="doc_id", match=MatchAny(any=list(where.doc_ids))))
    if where.levels is not None:
        must.append(FieldCondition(key="level", match=MatchAny(any=list(where.levels))))
    if where.ids is not None:
        must.append(HasIdCondition(point_ids=set(where.ids)))
    must_not: list[Any] | None = [HasIdCondition(point_ids=set(where.exclude_ids))] if where.exclude_ids else None
    return Filter(must=must or None, must_not=must_not)


def _copy_sparse(source: str, target: str) -> None:
    """Copy a file's data regions only: the store's files are mostly holes (a 32 MB memory map
    holding a few KB), which a plain copy would write out in full."""
    with open(source, "rb") as src, open(target, "wb") as dst:
        size = os.fstat(src.fileno()).st_size
        offset = 0
        while offset < size:
            try:
                start = os.lseek(src.fileno(), offset, os.SEEK_DATA)
            except OSError:  # ENXIO: no data past offset
                break
            end = os.lseek(src.fileno(), start, os.SEEK_HOLE)
            src.seek(start)
            dst.seek(start)
            left = end - start
            while left > 0:
                block = src.read(min(left, 1 << 20))
                if not block:
                    break
                dst.write(block)
                left -= len(block)
            offset = end
        dst.truncate(size)
    shutil.copystat(source, target)


def _lock_directory(root: Path, *, read_only: bool = False) -> IO[str] | None:
    """Hold an exclusive lock on the store directory for this process's lifetime. qdrant-edge
    cannot share a shard between processes (its write-ahead log is single-writer), so a second
    process gets a clear error instead of a WAL failure. A read-only store takes a shared lock on
    the file as it is, creating and writing nothing (a read-only directory may not even hold one:
    then no writer can be there either)."""
    if read_only:
        try:
            handle = (root / ".lock").open("r")
        except FileNotFoundError:
            return None
        mode = fcntl.LOCK_SH
    else:
        try:
            handle = (root / ".lock").open("a+")
        except OSError as exc:  # a read-only filesystem or folder
            raise StoreError(
                f"cannot write to the index at {root} ({exc.strerror}); to serve it as it is, open it "
                "read-only (cuerag-mcp --read-only, or CUERAG_READ_ONLY=true)"
            ) from exc
        mode = fcntl.LOCK_EX
    try:
        fcntl.flock(handle, mode | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise IndexBusy(
            f"the embedded index at {root} is open in {holder}; stop it first, or run a Qdrant server "
            "(CUERAG_QDRANT_URL) to share one index between processes",
            holder,
        ) from exc
    if read_only:
        return handle
    handle.seek(0)
    handle.truncate()
    handle.write(f"process {os.getpid()}")
    handle.flush()
    return handle


class EdgeStore:
    """Collections as qdrant-edge shards under `root`. Each shard is guarded by its own lock:
    the engine is called from several threads (the MCP server's worker pool)."""

    def __init__(self, root: Path, *, read_only: bool = False) -> None:
        self._root = root
        self._read_only = read_only
        self._scratch: Path | None = None  # working copies of a read-only store's collections
        if not read_only:
            try:
                self._root.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the index folder {root} ({exc.strerror})") from exc
        self._lock_file = _lock_directory(root, read_only=read_only) if root.is_dir() else None
        self._shards: dict[str, EdgeShard] = {}
        self._locks: dict[str, threading.RLock] = {}
        self._registry_lock = threading.Lock()

    def _dir(self, name: str) -> Path:
        if not _SAFE_NAME.match(name) or name in {".", ".."}:
            raise StoreError(f"invalid collection name {name!r}")
        return self._root / name

    @_named_errors("open collection")
    def _shard(self, name: str) -> tuple[EdgeShard, threading.RLock]:
        with self._registry_lock:
            shard = self._shards.get(name)
            if shard is None:
                path = self._dir(name)
                if not (path / _CONFIG_FILE).exists():
                    raise StoreError(f"collection {name!r} does not exist")
                shard = EdgeShard.load(str(self._working_copy(path) if self._read_only else path))
                self._shards[name] = shard
                self._locks[name] = threading.RLock()
            return shard, self._locks[name]

    @_named_errors("list collections")
    def _working_copy(self, path: Path) -> Path:
        """A private copy of a collection for a read-only store. qdrant-edge opens its files for
        writing (memory maps, the write-ahead log) even to read, so a read-only directory cannot
        be opened in place; the copy (in the system's temporary folder, holes kept, so it costs
        what the data weighs) is opened instead, and removed on close."""
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="cuerag-read-only-"))
        target = self._scratch / path.name
        shutil.copytree(path, target, copy_function=_copy_sparse)
        return target

    def list_collections(self) -> list[str]:
        if not self._root.is_dir():  # a read-only store over a data directory never written
            return []
        return sorted(p.name for p in self._root.iterdir() if (p / _CONFIG_FILE).exists())

    def _writable(self) -> None:
        if self._read_only:
            raise StoreError(f"the index at {self._root} is open read-only")

    def has_collection(self, name: str) -> bool:
        return (self._dir(name) / _CONFIG_FILE).exists()

    @_named_errors("create collection")
    def create_collection(self, name: str, dim: int) -> None:
        self._writable()
        path = self._dir(name)
        with self._registry_lock:
            if (path / _CONFIG_FILE).exists():
                return
            if path.exists():  # a creation that died before writing its config
                shutil.rmtree(path)
            config = EdgeConfig(vectors=EdgeVectorParams(size=dim, distance=Distance.Cosine))
            self._shards[name] = EdgeShard.create(str(path), config)
            self._locks[name] = threading.RLock()

    @_named_errors("read the configuration of collection")
    def collection_dim(self, name: str) -> int:
        import json

        config = json.loads((self._dir(name) / _CONFIG_FILE).read_text())
        return int(config["vectors"][""]["size"])

    @_named_errors("drop collection")
    def drop_collection(self, name: str) -> None:
        self._writable()
        with self._registry_lock:
            shard = self._shards.pop(name, None)
            self._locks.pop(name, None)
            if shard is not None:
                shard.close()
            shutil.rmtree(self._dir(name), ignore_errors=True)

    @_named_errors("write to collection")
    def upsert(self, name: str, points: Sequence[StoredPoint]) -> None:
        self._writable()
        if not points:
            return
        shard, lock = self._shard(name)
        batch = [
            Point(id=p.id, vector=np.asarray(p.vector, dtype=np.float32).tolist(), payload=p.payload) for p in points
        ]
        with lock:
            shard.update(UpdateOperation.upsert_points(batch))

    @_named_errors("search collection")
    def search(self, name: str, vector: np.ndarray, limit: int, *, where: PointFilter | None = None) -> list[Hit]:
        shard, lock = self._shard(name)
        request = QueryRequest(
            query=Query.Nearest(np.asarray(vector, dtype=np.float32).tolist()),
            filter=_filter(where),
            limit=limit,
            with_payload=True,
        )
        with lock:
            results = shard.query(request)
        return [Hit(id=str(r.id), score=float(r.score), payload=dict(r.payload or {})) for r in results]

    @_named_errors("read from collection")
    def retrieve(self, name: str, ids: Sequence[str], *, with_vectors: bool = False) -> list[StoredPoint]:
        if not ids:
            return []
        shard, lock = self._shard(name)
        with lock:
            records = shard.retrieve(point_ids=list(ids), with_payload=True, with_vector=with_vectors)
        return [StoredPoint(id=str(r.id), payload=dict(r.payload or {}), vector=_vector_of(r.vector)) for r in records]

    def scroll(self, name: str, *, with_vectors: bool = False, batch: int = 2048) -> Iterator[StoredPoint]:
        shard, lock = self._shard(name)
        offset = None
        while True:
            with lock:
                page, offset = self._scroll_page(
                    shard, ScrollRequest(offset=offset, limit=batch, with_payload=True, with_vector=with_vectors), name
                )
            for r in page:
                yield StoredPoint(id=str(r.id), payload=dict(r.payload or {}), vector=_vector_of(r.vector))
            if offset is None:
                return

    @staticmethod
    @_named_errors("read collection")
    def _scroll_page(shard: EdgeShard, request: ScrollRequest, name: str) -> tuple[list[Any], Any]:
        return shard.scroll(request)

    @_named_errors("delete from collection")
    def delete(self, name: str, ids: Sequence[str]) -> None:
        self._writable()
        if not ids:
            return
        shard, lock = self._shard(name)
        with lock:
            shard.update(UpdateOperation.delete_points(list(ids)))

    @_named_errors("count collection")
    def count(self, name: str) -> int:
        shard, lock = self._shard(name)
        with lock:
            return int(shard.count(CountRequest()))

    def close(self) -> None:
        with self._registry_lock:
            for shard in self._shards.values():
                if not self._read_only:
                    shard.flush()
                shard.close()
            self._shards.clear()
            self._locks.clear()
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
                self._scratch = None
            if self._lock_file is not None and not self._lock_file.closed:
                self._lock_file.close()  # releases the directory lock
