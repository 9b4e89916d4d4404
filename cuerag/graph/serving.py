"""Which stored chunks a reader is served: of each document one complete version, and of each file
one complete set of documents, whatever instant a writer died at.

Chunks are written in batches, so a run killed between two holds part of a document, or part of a
file's documents (a JSONL file of 300 records, a note of three sections). Every chunk therefore
says which version of its document it belongs to (`doc_version`) and how many chunks that version
has (`doc_chunks`); a chunk read from a file also says how many documents that file's version
holds (`file_docs`). Versions never share a point (cuerag.graph.ids.versioned_chunk_id), so writing a new
one leaves the old one whole until the new one is complete and the old one is deleted.

The rule, applied to whatever the store holds:
- a version is complete when all its chunks are there;
- a file's set of documents (one path under its root, file hash and document count) is whole when each of
  its documents has a complete version in it; of the sets read from one file, the newest whole
  one is served, and the documents of every other set from that file are not (a deletion of some
  of a file's documents writes the rest as a new, smaller set: cuerag.index.deletion);
- of a document's remaining complete versions, the newest is served; a document with none is not
  served at all (nothing of a first run that died half-way is seen).

Everything not served is stale: dropped from the snapshot and deleted from the store when found.
Chunks written before versions were recorded form one version, complete and oldest; chunks
written before file sets were recorded (no `file_docs`) count on their document alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from cuerag.store.base import StoredPoint

VERSION, VERSION_CHUNKS, WRITTEN, FILE_DOCS = "doc_version", "doc_chunks", "written", "file_docs"

_Key = tuple[str, str]  # (document id, version)
_FileSet = tuple[str, str, int]  # (source, file hash, documents)


def current_versions(chunks: Iterable[StoredPoint]) -> tuple[list[StoredPoint], list[str]]:
    """The chunks to serve and the ids of those to drop (see the module's rule)."""
    versions: dict[_Key, list[StoredPoint]] = {}
    for p in chunks:
        versions.setdefault((p.payload["doc_id"], str(p.payload.get(VERSION, ""))), []).append(p)
    complete = {key: points for key, points in versions.items() if _complete(points)}
    allowed = _whole_file_sets(complete)
    newest: dict[str, _Key] = {}
    for key in allowed:
        held = newest.get(key[0])
        if held is None or _written(complete[key]) > _written(complete[held]):
            newest[key[0]] = key
    served = set(newest.values())
    live = [p for key in served for p in versions[key]]
    stale = [p.id for key, points in versions.items() if key not in served for p in points]
    return live, stale


def file_set_of(payload: dict[str, object]) -> _FileSet:
    """The set of documents of one file version a chunk belongs to (its payload has `file_docs`)."""
    docs = payload[FILE_DOCS]
    count = int(docs) if isinstance(docs, int | float | str) else 0
    return (str(payload["source"]), str(payload.get("file_hash", "")), count)


def _complete(points: list[StoredPoint]) -> bool:
    """All of a version's chunks are stored (one chunk may be stored twice over a crash: ids count)."""
    return len({p.id for p in points}) >= int(points[0].payload.get(VERSION_CHUNKS, 0))


def _written(points: list[StoredPoint]) -> int:
    return max(int(p.payload.get(WRITTEN, 0)) for p in points)


def _whole_file_sets(complete: dict[_Key, list[StoredPoint]]) -> list[_Key]:
    """The complete versions a reader may be served: those read from no file (or recorded before
    file sets were), and those of the newest whole set of documents of each file."""
    free: list[_Key] = []
    sets: dict[_FileSet, list[_Key]] = {}
    for key, points in complete.items():
        payload = points[0].payload
        if FILE_DOCS not in payload or not payload.get("source") or not payload.get("root"):
            free.append(key)
            continue
        sets.setdefault(file_set_of(payload), []).append(key)
    best: dict[tuple[str, str], tuple[int, _FileSet]] = {}
    for file_set, keys in sets.items():
        if len({doc for doc, _ in keys}) < file_set[2]:
            continue  # part of the file's documents: a run died while writing them
        written = max(_written(complete[key]) for key in keys)
        # One file: its root and path. The root is not part of the set (a folder moved while its
        # chunks are rewritten has both roots in one set): the set's greatest one stands for it.
        place = (max(str(complete[key][0].payload.get("root", "")) for key in keys), file_set[0])
        held = best.get(place)
        if held is None or (written, file_set) > held:
            best[place] = (written, file_set)
    return free + [key for _, file_set in best.values() for key in sets[file_set]]
