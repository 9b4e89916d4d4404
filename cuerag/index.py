"""CUE-Index: documents → chunks → knowledge units → entities (NER), embedded and written to the
store. Units come from sentence splitting, or, for the chunks a knapsack selects under the budget
α, from an LLM (hybrid extraction; α=0, the default, needs no LLM).

Every point id is a hash of what the point is (a chunk of a document at a position with a text, a
unit text, a normalised entity name), so re-indexing the same text writes the same points. Writes
go entities → units → chunks: a chunk appears only after everything it points to exists, so a run
killed at any moment leaves the graph of earlier runs intact (the new units and entities are not
reachable until their chunk lands), and a rerun finishes the job with the same ids.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel

from cuerag.chunk_vectors import DERIVED, EMBEDDED, derive_chunk_vectors, stacked
from cuerag.chunking import chunk_document
from cuerag.citations import citation_payload, links_payload
from cuerag.config import Settings
from cuerag.diskspace import SpaceGuard, estimated_bytes
from cuerag.documents import Document
from cuerag.entities import normalize_entity
from cuerag.errors import Cancelled
from cuerag.extraction import ChunkText, UnitExtractor
from cuerag.folders import FileOutcome
from cuerag.graph import CHUNKS, ENTITIES, UNITS, Graph, collection_name
from cuerag.ids import chunk_point_id, doc_version_id, entity_point_id, unit_point_id
from cuerag.llm import LLM, LLMUsage, require_llm
from cuerag.models import Models, Pooled, PoolingEmbedder, mean_pooling
from cuerag.selection import bleu_values, cosine_values, random_values, select_chunks
from cuerag.store.base import StoredPoint, VectorStore
from cuerag.text import TextChunk, TextTools

log = logging.getLogger(__name__)

_WRITE_BATCH = 256
_EMBED_SLICE = 512

Progress = Callable[[str, int, int], None]
"""A progress sink: (stage, done, total)."""

ShouldStop = Callable[[], bool]
"""Asked between stages and batches: True stops the run (the caller went away or cancelled)."""


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


@dataclass(frozen=True)
class Written:
    """The points one run stored, and the chunks it removed: enough to update the snapshot
    without reading the store back."""

    chunks: list[StoredPoint]
    units: list[StoredPoint]
    entities: list[StoredPoint]
    removed_chunks: list[str]


# Document ids a report lists per kind of change: enough to open what a run just added, while the
# counts beside them say how many there were in all.
REPORTED_IDS = 100


class IndexReport(BaseModel):
    """What an index run did, and what the corpus holds afterwards."""

    corpus: str
    documents_added: int = 0
    documents_unchanged: int = 0
    documents_replaced: int = 0
    # The first REPORTED_IDS ids of the documents added, replaced (changed) and removed.
    added_doc_ids: list[str] = []
    changed_doc_ids: list[str] = []
    removed_doc_ids: list[str] = []
    chunks_added: int = 0
    chunks_kept: int = 0
    chunks_removed: int = 0
    units_added: int = 0
    units_kept: int = 0
    entities_added: int = 0
    entities_kept: int = 0
    totals: dict[str, int] = {}
    stage_seconds: dict[str, float] = {}
    chunks_llm: int = 0  # new chunks whose units came from the LLM
    chunks_fallback: int = 0  # chunks selected for the LLM that fell back to sentences
    elapsed_seconds: float = 0.0
    llm_usage: dict[str, LLMUsage] = {}  # per stage; empty at alpha 0
    # Runs over files and folders (`CueRag.index_paths`): what happened to each file.
    documents_removed: int = 0  # by a sync: documents of files gone from the folder
    added: list[FileOutcome] = []  # files read for the first time
    changed: list[FileOutcome] = []  # files whose content hash changed: read again, their documents replaced
    removed: list[FileOutcome] = []  # files gone from a synced folder: their documents deleted
    # How the embedder ran and why (cuerag.precision, cuerag.models.load_embedder).
    embedder_backend: str = ""
    embedder_precision: str = ""
    embedder_precision_reason: str = ""
    chunk_vectors: str = ""  # embedded or derived (cuerag.chunk_vectors)
    skipped: list[FileOutcome] = []  # files whose content hash is unchanged: not read
    failed: list[FileOutcome] = []  # files that could not be read, with the reason; the rest went on
    warnings: list[FileOutcome] = []  # what the walk read only in part: a .gitignore not read, lines of one
    passed_over: dict[str, int] = {}  # files of walked folders in formats not read, by suffix


@dataclass
class _Pieces:
    """The chunks of one run's documents: all of them (for selection) and the new ones."""

    run_pieces: list[tuple[TextChunk, str]] = field(default_factory=list)
    new: list[tuple[TextChunk, str]] = field(default_factory=list)
    doc_of: dict[str, str] = field(default_factory=dict)  # new chunk id -> document id
    provenance: dict[str, dict[str, str]] = field(default_factory=dict)  # document id -> where it came from
    source_of: dict[str, str | None] = field(default_factory=dict)  # new chunk id -> document source


@dataclass
class _Plan:
    """The points one run will write, before their vectors are computed."""

    chunks: list[StoredPoint] = field(default_factory=list)
    chunk_texts: list[str] = field(default_factory=list)
    # What a derived chunk vector is made of (cuerag.chunk_vectors), per new chunk: its head and
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


class Indexer:
    """Runs CUE-Index for one corpus against the current graph snapshot."""

    def __init__(
        self,
        *,
        settings: Settings,
        models: Models,
        text: TextTools,
        store: VectorStore,
        llm: LLM | None = None,
        space: SpaceGuard | None = None,
        should_stop: ShouldStop | None = None,
    ) -> None:
        self._settings = settings
        self._models = models
        self._text = text
        self._store = store
        self._llm = llm
        self._space = space
        self._should_stop = should_stop
        # Orders the versions of a document: after a crash between storing a replaced document's
        # new chunks and deleting its old ones, the graph serves the newest complete version.
        self._generation = time.time_ns()

    def _checkpoint(self, where: str) -> None:
        """Stop here if the caller asked to. Every checkpoint lies before the first chunk write,
        so a stopped run serves nothing of itself, like a run killed at that moment."""
        if self._should_stop is not None and self._should_stop():
            raise Cancelled(
                f"index run cancelled {where}: nothing of it is served and the corpus is as before; "
                "index the same documents again to finish (unchanged work is skipped)"
            )

    def run(
        self, corpus: str, docs: Sequence[Document], graph: Graph, *, progress: Progress | None = None
    ) -> tuple[IndexReport, Written]:
        """Index `docs` into `corpus`. Unchanged documents are skipped; a document whose id exists
        with other text replaces its old chunks."""
        progress = progress or _no_progress
        run = self._models.embedder_run
        report = IndexReport(
            corpus=corpus,
            embedder_backend=run.backend,
            embedder_precision=run.precision,
            embedder_precision_reason=run.reason,
            chunk_vectors=chunk_vectors_mode(self._settings, self._models),
        )
        started = time.perf_counter()

        plan = _Plan()
        with _timed(report, "split"):
            pending = self._new_pieces(docs, graph, report, plan, progress)
        if self._settings.alpha > 0 and not pending.new and docs:
            # Nothing new to extract: the documents are indexed already, whatever α they had then.
            log.warning(
                "alpha=%s: all documents are indexed already; index into a new corpus to re-extract",
                self._settings.alpha,
            )
        if self._settings.alpha > 0 and pending.new:
            self._checkpoint("before LLM extraction")
            with _timed(report, "select"):
                chosen = self._select(pending.run_pieces)
            with _timed(report, "extract"):
                llm_units = self._extract([(p, cid) for p, cid in pending.new if cid in chosen], report, progress)
        else:
            llm_units = {}
        self._checkpoint("after splitting")
        with _timed(report, "split"):
            self._plan_chunks(pending, llm_units, plan, graph, report)
        # NER of the units runs in a worker thread while their and the chunks' vectors are
        # computed here: neither needs the other, and NER's time was hidden inside the
        # embedding's in the README's measurement. The entities' vectors wait for NER. Progress
        # is reported from this thread only: callers' sinks may not accept calls from another.
        recognition = _Recognition(self._models, list(plan.unit_texts.values()))
        with ThreadPoolExecutor(1, thread_name_prefix="cuerag-ner") as pool:
            running = pool.submit(recognition.run)
            tick = functools.partial(recognition.report, progress)
            try:
                with _timed(report, "embed"):
                    pooler = self._deriving()
                    if pooler is None:
                        unit_vecs = self._embed("embed units", list(plan.unit_texts.values()), progress, tick)
                        chunk_vecs = self._embed("embed chunks", plan.chunk_texts, progress, tick)
                    else:
                        unit_vecs, chunk_vecs = self._derived(pooler, plan, graph, progress, tick)
                with _timed(report, "ner_wait"):
                    while not _finished(running):
                        self._checkpoint("during entity recognition")
                        tick()
                mentions = running.result()
            finally:
                recognition.stop.set()  # a cancelled or failed run stops the worker at its next slice
        tick()
        report.stage_seconds["ner"] = round(recognition.seconds, 3)
        self._plan_entities(plan, graph, report, mentions)
        with _timed(report, "embed"):
            entity_vecs = self._embed("embed entities", [n for n, _ in plan.entities.values()], progress)
        with _timed(report, "store"):
            written = self._write(corpus, plan, graph, (entity_vecs, unit_vecs, chunk_vecs), progress)

        report.elapsed_seconds = round(time.perf_counter() - started, 3)
        return report, written

    def _plan_chunks(
        self, pending: _Pieces, llm_units: dict[str, list[str]], plan: _Plan, graph: Graph, report: IndexReport
    ) -> None:
        """The new chunks' points and the units they hold (the LLM's, or their sentences)."""
        for piece, cid in pending.new:
            unit_texts = llm_units.get(cid) or self._text.sentences(piece.unit_text)
            unit_ids = []
            for sentence in unit_texts:
                uid = unit_point_id(sentence)
                if uid not in unit_ids:
                    unit_ids.append(uid)
                if uid in graph.unit_pos:
                    continue
                plan.unit_texts.setdefault(uid, sentence)
            payload: dict[str, object] = {
                "doc_id": pending.doc_of[cid],
                "title": piece.title,
                "text": piece.text,
                "index": piece.index,
                "tokens": piece.tokens,
                "unit_ids": unit_ids,
                "extraction": "llm" if cid in llm_units else "sentences",
                "embedder": self._models.embedder.name,
                "vectors": self._models.embedder_run.vectors,
                "chunk_vectors": chunk_vectors_mode(self._settings, self._models),
                **pending.provenance.get(pending.doc_of[cid], {}),
                **self._version_payload(plan, pending.doc_of[cid]),
                **citation_payload(piece.place, pending.source_of.get(cid)),
            }
            if self._settings.title_entities and normalize_entity(piece.title):
                eid = entity_point_id(piece.title)
                payload["title_entity_id"] = eid
                if eid in graph.entity_pos:
                    plan.kept_entities.add(eid)
                else:
                    plan.entities.setdefault(eid, (piece.title, "TITLE"))
            plan.chunks.append(StoredPoint(id=cid, payload=payload))
            plan.chunk_texts.append(piece.full_text)
            plan.chunk_parts.append(None if cid in llm_units else (piece.head, unit_texts))
        report.chunks_added = len(plan.chunks)
        report.chunks_removed = len(plan.stale_chunks)
        report.units_added = len(plan.unit_texts)
        linked = {u for c in plan.chunks for u in c.payload["unit_ids"]}
        report.units_kept = len(linked - plan.unit_texts.keys())

    def _version_payload(self, plan: _Plan, doc_id: str) -> dict[str, object]:
        version, chunks = plan.versions[doc_id]
        return {"doc_version": version, "doc_chunks": chunks, "written": self._generation}

    def _new_pieces(
        self, docs: Sequence[Document], graph: Graph, report: IndexReport, plan: _Plan, progress: Progress
    ) -> _Pieces:
        """Chunk every document; sort its chunks into unchanged, replaced and new."""
        pending = _Pieces()
        existing_by_doc = graph.doc_chunks()
        variant = chunk_variant(self._settings)
        for n, doc in enumerate(docs, start=1):
            pieces = chunk_document(
                self._text, doc, max_tokens=self._settings.chunk_tokens, overlap=self._settings.chunk_overlap
            )
            ids = [chunk_point_id(doc.id, p.index, p.text, variant) for p in pieces]
            pending.run_pieces.extend(zip(pieces, ids, strict=True))
            provenance = _provenance(doc)
            pending.provenance[doc.id] = provenance
            old = {graph.chunk_ids[c] for c in existing_by_doc.get(doc.id, [])}
            labels = {cid: _labels(provenance, piece) for piece, cid in zip(pieces, ids, strict=True)}
            if old and old == set(ids):
                plan.refreshed.extend(_refreshed(graph, labels))
                report.documents_unchanged += 1
                report.chunks_kept += len(ids)
                continue
            plan.versions[doc.id] = (doc_version_id(ids), len(ids))
            if old:
                report.documents_replaced += 1
                _listed(report.changed_doc_ids, doc.id)
                plan.stale_chunks.extend(sorted(old - set(ids)))
            else:
                report.documents_added += 1
                _listed(report.added_doc_ids, doc.id)
            for piece, cid in zip(pieces, ids, strict=True):
                if cid in old:
                    plan.relabelled[cid] = labels[cid]
                if cid in old or cid in pending.doc_of:
                    report.chunks_kept += 1
                    continue
                pending.doc_of[cid] = doc.id
                pending.source_of[cid] = doc.source
                pending.new.append((piece, cid))
            progress("split", n, len(docs))
        return pending

    def _select(self, pieces: list[tuple[TextChunk, str]]) -> set[str]:
        """The chunks the LLM rewrites: a knapsack over every chunk of this run's documents, new or
        not, so that a rerun of the same documents (after a crash, say) makes the same choice."""
        texts = [p.text for p, _ in pieces]
        if self._settings.selection == "bleu":
            values = bleu_values(texts)
        elif self._settings.selection == "cosine":
            values = cosine_values(self._models.embedder.encode(texts, batch_size=self._settings.embed_batch_size))
        else:
            values = random_values(len(texts), seed=0)
        chosen = select_chunks(values, [p.tokens for p, _ in pieces], self._settings.alpha)
        return {pieces[i][1] for i in chosen}

    def _extract(
        self, selected: list[tuple[TextChunk, str]], report: IndexReport, progress: Progress
    ) -> dict[str, list[str]]:
        """LLM units for the selected new chunks, by chunk id; fallbacks are left out (they get
        sentences like any other chunk) and counted."""
        if not selected:
            return {}
        extractor = UnitExtractor(
            require_llm(self._llm, f"alpha={self._settings.alpha}"),
            sentences=self._text.sentences,
            concurrency=self._settings.llm_concurrency,
            max_tokens=self._settings.llm_max_tokens,
        )
        results = extractor.extract(
            [ChunkText(p.title, p.text) for p, _ in selected], lambda done, total: progress("extract", done, total)
        )
        report.chunks_llm = sum(r.from_llm for r in results)
        report.chunks_fallback = len(results) - report.chunks_llm
        report.llm_usage = {"extract": sum((r.usage for r in results), LLMUsage())}
        return {cid: r.units for (_, cid), r in zip(selected, results, strict=True) if r.from_llm}

    def _plan_entities(
        self, plan: _Plan, graph: Graph, report: IndexReport, mentions: list[list[tuple[str, str]]]
    ) -> None:
        """Link each new unit to the entities NER found in it (in unit order, so the same run
        makes the same entities); entities not in the graph yet are new points."""
        for uid, found in zip(plan.unit_texts.keys(), mentions, strict=True):
            linked: list[str] = []
            for surface, label in found:
                norm = normalize_entity(surface)
                if not norm:
                    continue
                eid = entity_point_id(surface)
                if eid in linked:
                    continue
                linked.append(eid)
                if eid in graph.entity_pos:
                    plan.kept_entities.add(eid)
                else:
                    plan.entities.setdefault(eid, (surface.strip(), label))
            plan.unit_entities[uid] = linked
        report.entities_added = len(plan.entities)
        report.entities_kept = len(plan.kept_entities)

    def _embed(
        self, stage: str, texts: list[str], progress: Progress, between: Callable[[], None] | None = None
    ) -> np.ndarray:
        """Vectors of `texts`; `between` runs after each slice (it reports the NER worker's
        progress while this thread embeds)."""
        embedder = self._models.embedder
        out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
        for rows in self._slices(stage, texts, progress, between):
            out[rows] = embedder.encode([texts[i] for i in rows], batch_size=self._settings.embed_batch_size)
        return out

    def _pooled(
        self,
        pooler: PoolingEmbedder,
        stage: str,
        texts: list[str],
        progress: Progress,
        between: Callable[[], None] | None = None,
    ) -> Pooled:
        """The token sums and counts of `texts` (`_embed` for a derivation's parts)."""
        sums = np.zeros((len(texts), pooler.dim), dtype=np.float32)
        counts = np.zeros(len(texts), dtype=np.float32)
        for rows in self._slices(stage, texts, progress, between):
            part = pooler.pooled([texts[i] for i in rows], batch_size=self._settings.embed_batch_size)
            sums[rows], counts[rows] = part.sums, part.counts
        return Pooled(sums, counts)

    def _slices(
        self, stage: str, texts: list[str], progress: Progress, between: Callable[[], None] | None
    ) -> Iterator[list[int]]:
        """The rows of `texts` in slices to embed, with a stop check before and progress after
        each. Texts of similar length share a batch, so little time goes into padding."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(texts), _EMBED_SLICE):
            self._checkpoint(f"while embedding ({stage})")
            yield order[start : start + _EMBED_SLICE]
            progress(stage, min(start + _EMBED_SLICE, len(texts)), len(texts))
            if between is not None:
                between()

    def _deriving(self) -> PoolingEmbedder | None:
        """The embedder to derive chunk vectors with, or None when chunks are embedded whole."""
        if chunk_vectors_mode(self._settings, self._models) != DERIVED:
            return None
        return mean_pooling(self._models.embedder)

    def _derived(
        self, pooler: PoolingEmbedder, plan: _Plan, graph: Graph, progress: Progress, between: Callable[[], None]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Unit vectors, and chunk vectors derived from them (cuerag.chunk_vectors): the new units'
        token sums come with their vectors; the units already stored that a new chunk holds and the
        chunks' heads are pooled here (short texts); a chunk whose units came from the LLM is
        embedded whole."""
        new = list(plan.unit_texts.items())
        units = self._pooled(pooler, "embed units", [t for _, t in new], progress, between)
        row = {uid: n for n, (uid, _) in enumerate(new)}
        extra: dict[str, str] = {}  # units stored before, and heads: pooled below, rows after the new units'
        for parts in plan.chunk_parts:
            if parts is None:
                continue
            head, sentences = parts
            for key, text in ((f"head:{head}", head), *((unit_point_id(s), s) for s in sentences)):
                if text and key not in row and key not in extra:
                    extra[key] = text
        row.update({key: len(new) + n for n, key in enumerate(extra)})
        pooled = stacked(units, self._pooled(pooler, "embed chunk parts", list(extra.values()), progress, between))
        rows = [[] if parts is None else _part_rows(parts, row) for parts in plan.chunk_parts]
        # Within the model's window, as an embedded chunk is cut there: the same text counts.
        chunk_vecs = derive_chunk_vectors(rows, pooled, max_tokens=pooler.max_tokens)
        # A chunk with nothing to derive from (no title or heading, every sentence dropped as
        # punctuation) would get an all-zero vector: it is embedded whole, as `embedded` does.
        whole = [n for n, parts in enumerate(plan.chunk_parts) if parts is None or not rows[n]]
        if whole:
            chunk_vecs[whole] = self._embed("embed chunks", [plan.chunk_texts[n] for n in whole], progress, between)
        return units.vectors, chunk_vecs

    def _write(
        self,
        corpus: str,
        plan: _Plan,
        graph: Graph,
        vectors: tuple[np.ndarray, np.ndarray, np.ndarray],
        progress: Progress,
    ) -> Written:
        entity_vecs, unit_vecs, chunk_vecs = vectors
        entity_points = [
            StoredPoint(id=eid, payload={"name": name, "norm": normalize_entity(name), "label": label}, vector=v)
            for (eid, (name, label)), v in zip(plan.entities.items(), entity_vecs, strict=True)
        ]
        unit_points = [
            StoredPoint(id=uid, payload={"text": text, "entity_ids": plan.unit_entities.get(uid, [])}, vector=v)
            for (uid, text), v in zip(plan.unit_texts.items(), unit_vecs, strict=True)
        ]
        chunk_points = [
            StoredPoint(id=c.id, payload=c.payload, vector=v) for c, v in zip(plan.chunks, chunk_vecs, strict=True)
        ]
        chunk_points += plan.refreshed + self._relabelled(plan, graph)
        total = len(entity_points) + len(unit_points) + len(chunk_points)
        remaining = estimated_bytes([*entity_points, *unit_points, *chunk_points])
        done = 0
        # Order matters for crash safety: a chunk is written only after what it points to.
        for kind, points in ((ENTITIES, entity_points), (UNITS, unit_points), (CHUNKS, chunk_points)):
            name = collection_name(corpus, kind)
            if kind == CHUNKS:
                # The last stop: past here chunks land and the run's documents become visible.
                self._checkpoint("before storing chunks")
                self._require_space(remaining)
            for start in range(0, len(points), _WRITE_BATCH):
                batch = points[start : start + _WRITE_BATCH]
                if kind != CHUNKS:
                    self._checkpoint(f"while storing {kind}")
                    self._require_space(remaining)
                self._store.upsert(name, batch)
                remaining -= estimated_bytes(batch)
                done += len(batch)
                progress("store", done, total)
        # Replaced chunks go last, once their successors are stored.
        self._store.delete(collection_name(corpus, CHUNKS), plan.stale_chunks)
        return Written(chunk_points, unit_points, entity_points, plan.stale_chunks)

    def _relabelled(self, plan: _Plan, graph: Graph) -> list[StoredPoint]:
        """The unchanged chunks of replaced documents, with their new version's labels."""
        if not plan.relabelled or graph.points is None:
            return []
        out = []
        for cid, labels in plan.relabelled.items():
            old = graph.points.chunks[cid]
            payload = {k: v for k, v in old.payload.items() if k not in _LABELS} | labels
            payload |= self._version_payload(plan, old.payload["doc_id"])
            out.append(StoredPoint(id=cid, payload=payload, vector=old.vector))
        return out

    def _require_space(self, needed: int) -> None:
        if self._space is not None:
            self._space.require(max(needed, 0), "this index run")


def _listed(ids: list[str], doc_id: str) -> None:
    if len(ids) < REPORTED_IDS:
        ids.append(doc_id)


def vectors_stamp(models: Models) -> str:
    """How this engine's vectors are made, as stored on every chunk (`embedder`, `vectors`)."""
    return f"{models.embedder.name} ({models.embedder_run.vectors})"


def _part_rows(parts: tuple[str, list[str]], row: dict[str, int]) -> list[int]:
    """The pooled rows of a chunk's head (when it has one) and of its sentences, in order."""
    head, sentences = parts
    return ([row[f"head:{head}"]] if head else []) + [row[unit_point_id(s)] for s in sentences]


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
    return str(next(iter(graph.points.chunks.values())).payload.get("chunk_vectors", EMBEDDED))


def stored_vectors_stamp(graph: Graph, models: Models) -> str:
    """How a corpus's vectors were made, from any of its chunks. Chunks stored before the stamp
    existed were made by the torch embedder in float, under the embedder configured now."""
    if graph.points is None or not graph.points.chunks:
        return vectors_stamp(models)
    payload = next(iter(graph.points.chunks.values())).payload
    return f"{payload.get('embedder', models.embedder.name)} ({payload.get('vectors', 'float')})"


class _Recognition:
    """NER of the new units, in slices, meant for a worker thread: it counts what it has done
    for the owning thread to report, and stops at the next slice once `stop` is set."""

    def __init__(self, models: Models, texts: list[str]) -> None:
        self._ner = models.ner
        self._texts = texts
        self.done = 0
        self._reported = -1
        self.seconds = 0.0
        self.stop = threading.Event()

    def run(self) -> list[list[tuple[str, str]]]:
        started = time.perf_counter()
        mentions: list[list[tuple[str, str]]] = []
        for start in range(0, len(self._texts), _EMBED_SLICE):
            if self.stop.is_set():
                raise Cancelled("entity recognition stopped")
            mentions.extend(self._ner.extract(self._texts[start : start + _EMBED_SLICE]))
            self.done = len(mentions)
        self.seconds = time.perf_counter() - started
        return mentions

    def report(self, progress: Progress) -> None:
        done = self.done
        if done != self._reported:
            self._reported = done
            progress("ner", done, len(self._texts))


def _finished(future: Future[Any], wait: float = 0.5) -> bool:
    try:
        future.result(timeout=wait)
    except TimeoutError:
        return False
    except BaseException:  # raised again by the caller's result()
        return True
    return True


def chunk_variant(settings: Settings) -> str:
    """The index settings that shape a chunk's payload beyond its text: part of its id."""
    return "title-entities" if settings.title_entities else ""


def index_shape(settings: Settings) -> str:
    """Every index setting that decides what a file's chunks are. It goes into a file's stored
    hash (cuerag.sync), so that changing one re-reads the files instead of skipping them."""
    return f"{settings.chunk_tokens}:{settings.chunk_overlap}:{chunk_variant(settings)}"


_PROVENANCE = ("source", "root", "file_hash")
# The payload keys a kept chunk is brought up to date in: its file's provenance, the document's
# metadata (front matter, on its first chunk) and the chunk's hyperlinks (their targets and places),
# which an edit can change while the text, and so every chunk id, stays the same.
_LABELS = (*_PROVENANCE, "doc_metadata", "links")


def _provenance(doc: Document) -> dict[str, str]:
    """The payload keys that say which file (and which version of it) a document came from."""
    values = {"source": doc.source, "root": doc.root, "file_hash": doc.file_hash}
    return {k: v for k, v in values.items() if v is not None}


def _labels(provenance: dict[str, str], piece: TextChunk) -> dict[str, object]:
    """A chunk's labels (`_LABELS`) as the document gives them now."""
    labels: dict[str, object] = dict(provenance)
    if piece.place is not None:
        labels["links"] = links_payload(piece.place)
        if piece.place.metadata:
            labels["doc_metadata"] = piece.place.metadata
    return labels


def _refreshed(graph: Graph, labels: dict[str, dict[str, object]]) -> list[StoredPoint]:
    """Kept chunks whose stored labels differ from the document's now (a JSON file edited
    elsewhere, a folder moved, front matter edited): their payload is brought up to date, so that
    the next sync sees the file as unchanged and filters see the metadata as it is."""
    if graph.points is None:
        return []
    out = []
    for cid in sorted(labels):
        point = graph.points.chunks[cid]
        if {k: point.payload.get(k) for k in _LABELS} == {k: labels[cid].get(k) for k in _LABELS}:
            continue
        payload = {k: v for k, v in point.payload.items() if k not in _LABELS} | labels[cid]
        out.append(StoredPoint(id=cid, payload=payload, vector=point.vector))
    return out


@contextmanager
def _timed(report: IndexReport, stage: str) -> Iterator[None]:
    """Add the block's time to the stage's (a stage may run in more than one step)."""
    start = time.perf_counter()
    yield
    spent = time.perf_counter() - start
    report.stage_seconds[stage] = round(report.stage_seconds.get(stage, 0.0) + spent, 3)
