"""What an index run of files must do to a corpus: which files to read, which to skip, and (for a
sync) which documents to delete.

A file is skipped when the store already holds it, from the same root and path, with the same
content hash (the sha256 of its bytes, kept in every chunk payload of its documents), so an
unchanged file is hashed but never parsed, chunked or embedded. A file that is new, or whose hash
differs, is read; its documents then go through the indexer, which keeps what is unchanged chunk
by chunk. An unchanged file whose stored links are stale (resolved from the wrong folder by an
older version: `cuerag.index.stale_links`) is read again too, so its kept chunks are relabelled
with the links resolved right, nothing embedded; the report counts it as repaired. A sync also
deletes the documents that came from files under a synced folder (or from a synced file) that the
walk no longer finds: deleted, moved, or now left out by the ignore rules.
Documents indexed inline, or from other roots, are never touched by it. A file that fails to read
keeps its earlier version in the corpus: a failure is not a deletion.

A file is opened once: its bytes come from the descriptor that the path check saw (see
`cuerag.ingest.formats.reading`), and the hash and the parse are of those same bytes.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cuerag.errors import Cancelled, InputError, RequestTooLarge, first_line
from cuerag.graph.schema import chunk_payload
from cuerag.graph.snapshot import Graph
from cuerag.index.stale_links import has_stale_links
from cuerag.ingest.artefacts import LeftOutTally
from cuerag.ingest.corpus_shape import NotACorpus
from cuerag.ingest.documents import JSON_SUFFIXES, Document, check_documents, dedupe_documents, parse_file
from cuerag.ingest.folders import FileCheck, FileOutcome, FoundFile, Walk, WalkRules, shown, walk_paths
from cuerag.ingest.formats import SUPPORTED_SUFFIXES
from cuerag.ingest.formats.reading import ByteBudget, ReadLimits, read_file_once

log = logging.getLogger(__name__)


@dataclass
class StoredFile:
    """What the corpus holds from one file: its documents and the hash they were read at (None
    when its chunks disagree, as after a run killed half-way)."""

    doc_ids: set[str] = field(default_factory=set)
    chunks: int = 0
    file_hash: str | None = None
    hashes: set[str] = field(default_factory=set)
    stale_links: bool = False  # links stored resolved from the wrong folder (cuerag.index.stale_links)


@dataclass
class SyncPlan:
    """The documents to (re)index, the documents to delete, and the per-file story for the report."""

    documents: list[Document] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    added: list[FileOutcome] = field(default_factory=list)
    changed: list[FileOutcome] = field(default_factory=list)
    removed: list[FileOutcome] = field(default_factory=list)
    skipped: list[FileOutcome] = field(default_factory=list)
    # Unchanged files read again because their stored links were stale: their chunks are kept and
    # relabelled, nothing embedded.
    repaired: list[FileOutcome] = field(default_factory=list)
    failed: list[FileOutcome] = field(default_factory=list)
    warnings: list[FileOutcome] = field(default_factory=list)  # the walk's (cuerag.ingest.folders.Walk)
    passed_over: dict[str, int] = field(default_factory=dict)  # files not read for their format
    # Generator artefacts and vendored folders the walk left out, and walked JSON that is no corpus.
    left_out: LeftOutTally = field(default_factory=LeftOutTally)
    unchanged_documents: int = 0  # in skipped files
    unchanged_chunks: int = 0


def file_hash(raw: bytes, shape: str) -> str:
    """The sha256 of the index settings that shape chunks (`shape`) and a file's bytes: equal
    hashes mean the file would index to the same chunks."""
    return hashlib.sha256(shape.encode() + b"\x00" + raw).hexdigest()


def stored_files(graph: Graph | None) -> dict[str, StoredFile]:
    """The corpus's documents by the file they came from (root/source); inline documents are not
    in it."""
    out: dict[str, StoredFile] = {}
    if graph is None or graph.points is None:
        return out
    for point in graph.points.chunks.values():
        payload = chunk_payload(point)
        source, root = payload.get("source"), payload.get("root")
        if not source or not root:
            continue
        entry = out.setdefault(f"{root}/{source}", StoredFile())
        entry.doc_ids.add(payload["doc_id"])
        entry.chunks += 1
        entry.hashes.add(str(payload.get("file_hash", "")))
        entry.stale_links = entry.stale_links or has_stale_links(payload)
    for entry in out.values():
        entry.file_hash = next(iter(entry.hashes)) if len(entry.hashes) == 1 else None
    return out


def with_provenance(file: FoundFile, docs: list[Document], digest: str) -> list[Document]:
    """A file's documents carrying where they came from. A text-like file is one document whose
    id is its source path; records of a JSON file keep their own ids."""
    by_path = file.path.suffix.lower() not in JSON_SUFFIXES
    return [
        d.model_copy(
            update={
                "id": file.source if by_path else d.id,
                "source": file.source,
                "root": file.root.as_posix(),
                "file_hash": digest,
            }
        )
        for d in check_documents(docs)
    ]


def plan_sync(
    walk: Walk,
    graph: Graph | None,
    *,
    sync: bool,
    strict: bool,
    shape: str = "",
    check: FileCheck | None = None,
    limits: ReadLimits | None = None,
    budget: ByteBudget | None = None,
    known_failures: Mapping[str, str] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> SyncPlan:
    """Read what changed and decide what goes (`shape`: see `file_hash`). With `strict`, the
    first bad file raises InputError (nothing has been written yet); otherwise it is listed in
    `failed` and the rest go on. A request over its byte `budget` is refused whole.
    `known_failures` (path → reason, as a watch's last sync reported them): a file failing again
    for the same reason is still listed but logged at debug level, so a watch warns once."""
    known = known_failures or {}
    plan = SyncPlan(warnings=list(walk.warnings), passed_over=dict(walk.passed_over), left_out=walk.left_out.copy())
    named = set(walk.scopes)  # a file named outright is its own scope; a walked file is under one
    for warning in walk.warnings:  # told once, as failures are
        level = logging.DEBUG if known.get(warning.path) == warning.reason else logging.WARNING
        log.log(level, "%s: %s", warning.path, warning.reason)
    limits = limits or ReadLimits()
    stored = stored_files(graph)
    keep: set[str] = set()
    seen: set[str] = set()
    # Which file of this walk holds each document id, in walk order. A second file may not take an
    # id over: a JSON record whose id is another file's path would replace that file's document,
    # and the two would trade places at every sync. (A file of a later run may: that is how a
    # moved folder is repointed.)
    claimed: dict[str, str] = {}
    for file in walk.entries:
        # Reading and parsing 20,000 files takes many seconds: a cancel is seen at the next file.
        if should_stop is not None and should_stop():
            raise Cancelled("index run cancelled while reading the files: nothing was written")
        if isinstance(file, FileOutcome):  # could not be walked to: a loop, a dangling link
            _fail(plan, file, strict=strict, known=known)
            continue
        location = file.location
        seen.add(location)
        before = stored.get(location)
        shown_path = shown(file.path)
        repair = False
        try:
            # Read once, through the checked descriptor; the hash and the parse see the same bytes.
            raw = read_file_once(file.path, limits=limits, check=check)
            try:
                digest = file_hash(raw, shape)
                unchanged = before is not None and before.file_hash == digest
                repair = unchanged and before is not None and before.stale_links
                if budget is not None and (repair or not unchanged):  # an unchanged file is hashed, not charged
                    budget.charge(len(raw), str(file.path))
                parsed = (
                    None
                    if unchanged and not repair
                    else parse_file(
                        file.path,
                        raw,
                        root=file.root,
                        limits=limits,
                        source=file.source,
                        walked=location not in named,
                    )
                )
            finally:
                del raw  # a refusal's traceback holds this frame: it must not hold the file's bytes
            if parsed is None:
                assert before is not None
                plan.skipped.append(FileOutcome(path=shown_path, reason="unchanged"))
                plan.unchanged_documents += len(before.doc_ids)
                plan.unchanged_chunks += before.chunks
                keep |= before.doc_ids
                for d in before.doc_ids:
                    claimed.setdefault(d, location)
                continue
            docs = with_provenance(file, parsed, digest)
            _claim(docs, file, claimed)
        except RequestTooLarge:
            raise
        except NotACorpus as exc:  # JSON in a walked folder that is not a corpus: passed over, not failed
            log.debug("%s: %s", shown_path, exc)
            plan.left_out.add(exc.left_out, file.source)
            continue
        except (InputError, OSError) as exc:
            _fail(plan, FileOutcome(path=shown_path, reason=_reason(exc, file)), strict=strict, known=known)
            if before is not None:
                keep |= before.doc_ids  # a file that cannot be read now keeps its earlier version
            continue
        except Exception as exc:  # one file's reader failing must not stop the rest
            # A parser library can fail in ways it does not declare (a RecursionError deep in a
            # YAML or HTML parser): that file is reported with the error, the rest is indexed.
            log.debug("reading %s failed", shown_path, exc_info=True)
            reason = f"could not be read ({type(exc).__name__}: {first_line(exc)[:200]})"
            _fail(plan, FileOutcome(path=shown_path, reason=reason), strict=strict, known=known)
            if before is not None:
                keep |= before.doc_ids
            continue
        plan.documents.extend(docs)
        keep |= {d.id for d in docs}
        if repair:
            plan.repaired.append(FileOutcome(path=shown_path, reason="unchanged; stale links resolved again"))
        else:
            (plan.changed if before is not None else plan.added).append(FileOutcome(path=shown_path))
    if sync:
        for location, entry in sorted(stored.items()):
            if not _in_scope(location, walk.scopes):
                continue
            gone = sorted(entry.doc_ids - keep)
            plan.remove.extend(gone)
            if location not in seen and gone:
                plan.removed.append(FileOutcome(path=location, reason="no longer in the folder"))
        plan.remove = sorted(set(plan.remove))
    return plan


def _claim(docs: list[Document], file: FoundFile, claimed: dict[str, str]) -> None:
    """Record the file's document ids, or refuse the file if another file holds one of them."""
    for doc in docs:
        owner = claimed.get(doc.id, file.location)
        if owner != file.location:
            raise InputError(
                f"document id {doc.id!r} is already the id of a document from {owner}; ids must be unique in a corpus"
            )
    for doc in docs:
        claimed[doc.id] = file.location


def _in_scope(location: str, scopes: list[str]) -> bool:
    return any(location == scope or location.startswith(scope.rstrip("/") + "/") for scope in scopes)


def _reason(exc: Exception, file: FoundFile) -> str:
    """A one-line reason without the path (the report line carries it)."""
    text = str(exc) if isinstance(exc, InputError) else f"cannot be read: {getattr(exc, 'strerror', None) or exc}"
    for form in (str(file.path), shown(file.path)):
        text = text.replace(f": {form}", "").replace(f"{form}: ", "").replace(form, file.source)
    return text


def _fail(plan: SyncPlan, failure: FileOutcome, *, strict: bool, known: Mapping[str, str]) -> None:
    if strict:
        raise InputError(f"{failure.path}: {failure.reason} (strict: nothing was written)")
    repeated = known.get(failure.path) == failure.reason
    log.log(logging.DEBUG if repeated else logging.WARNING, "skipping %s: %s", failure.path, failure.reason)
    plan.failed.append(failure)


def load_paths(
    paths: Sequence[str | Path],
    *,
    check: FileCheck | None = None,
    rules: WalkRules | None = None,
    limits: ReadLimits | None = None,
    max_request_bytes: int | None = None,
) -> list[Document]:
    """Every document under the given files and folders, all read and validated before any is
    returned: the first bad file raises InputError. For reading a corpus file whole (evaluation,
    benchmarks); an index run goes through `plan_sync`, which can go on past a bad file. What a
    walk left out (JSON in a folder that is not a corpus or does not parse) is logged, as a
    report would tell it."""
    walk = walk_paths(paths, rules=rules, check=check)
    if not walk.files and not walk.failed:
        raise no_files_error(paths, walk.left_out)
    budget = ByteBudget(max_request_bytes) if max_request_bytes is not None else None
    plan = plan_sync(walk, None, sync=False, strict=True, check=check, limits=limits, budget=budget)
    for entry in plan.left_out.report():
        log.warning("left out: %d (%s): %s", entry.count, entry.reason, ", ".join(entry.paths))
    if not plan.documents:
        raise no_files_error(paths, plan.left_out)
    return dedupe_documents(plan.documents)


def no_files_error(paths: Sequence[str | Path], left_out: LeftOutTally | None = None) -> InputError:
    """Nothing to read under `paths`; what the walk left out is told too, since it may be why (a
    folder of JSON files that are not corpora, or a corpus cut short)."""
    listed = ", ".join(shown(p) for p in paths)
    told = "".join(  # as the report tells it (cuerag.cli.render)
        f"; left out: {e.count} ({e.reason}): {', '.join(e.paths)}{' …' if e.count > len(e.paths) else ''}"
        for e in (left_out.report() if left_out is not None else [])
    )
    return InputError(f"no indexable files ({', '.join(sorted(SUPPORTED_SUFFIXES))}) under {listed}{told}")
