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
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from cuerag.config import Settings
from cuerag.errors import Cancelled
from cuerag.graph.citations import citation_payload
from cuerag.graph.ids import chunk_point_id, entity_point_id, unit_point_id
from cuerag.graph.schema import (
    CHUNKS,
    ENTITIES,
    UNITS,
    ChunkPayload,
    EntityPayload,
    UnitPayload,
    VersionPayload,
    chunk_payload,
    collection_name,
    stored,
)
from cuerag.graph.snapshot import Graph
from cuerag.index.doc_versions import copied_points, doc_version, file_doc_counts, file_key, stored_by_key
from cuerag.index.embedding import Embedding
from cuerag.index.extraction import ChunkText, UnitExtractor
from cuerag.index.knapsack import bleu_values, cosine_values, random_values, select_chunks
from cuerag.index.payload import _labels, _provenance, relabel_in_place
from cuerag.index.recognition import _finished, _Recognition
from cuerag.index.report import IndexReport, Progress, ShouldStop, Written, _listed, _no_progress, _timed
from cuerag.index.run_plan import Pieces, RunPlan
from cuerag.index.stamps import chunk_variant, chunk_vectors_mode
from cuerag.ingest.documents import Document
from cuerag.llm.client import LLM, LLMUsage, require_llm
from cuerag.models.loading import Models
from cuerag.store.base import StoredPoint, VectorStore
from cuerag.store.diskspace import SpaceGuard, estimated_bytes
from cuerag.text.chunk import TextChunk
from cuerag.text.chunking import chunk_document
from cuerag.text.entities import normalize_entity
from cuerag.text.tools import TextTools

log = logging.getLogger(__name__)

_WRITE_BATCH = 256


"""A progress sink: (stage, done, total)."""

"""Asked between stages and batches: True stops the run (the caller went away or cancelled)."""


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
        self._embedding = Embedding(settings, models, self._checkpoint)
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

        plan = RunPlan()
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
        # embedding's in the measurement in docs/performance.md. The entities' vectors wait for NER. Progress
        # is reported from this thread only: callers' sinks may not accept calls from another.
        recognition = _Recognition(self._models, list(plan.unit_texts.values()))
        with ThreadPoolExecutor(1, thread_name_prefix="cuerag-ner") as pool:
            running = pool.submit(recognition.run)
            tick = functools.partial(recognition.report, progress)
            try:
                with _timed(report, "embed"):
                    pooler = self._embedding.deriving()
                    if pooler is None:
                        unit_vecs = self._embedding.embed("embed units", list(plan.unit_texts.values()), progress, tick)
                        chunk_vecs = self._embedding.embed("embed chunks", plan.chunk_texts, progress, tick)
                    else:
                        unit_vecs, chunk_vecs = self._embedding.derived(pooler, plan, graph, progress, tick)
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
            entity_vecs = self._embedding.embed("embed entities", [n for n, _ in plan.entities.values()], progress)
        with _timed(report, "store"):
            written = self._write(corpus, plan, graph, (entity_vecs, unit_vecs, chunk_vecs), progress)

        report.elapsed_seconds = round(time.perf_counter() - started, 3)
        return report, written

    def _plan_chunks(
        self, pending: Pieces, llm_units: dict[str, list[str]], plan: RunPlan, graph: Graph, report: IndexReport
    ) -> None:
        """The new chunks' points and the units they hold (the LLM's, or their sentences)."""
        for piece, cid in pending.new:
            unit_texts = llm_units.get(cid) or self._text.sentences(piece.unit_text)
            unit_ids = []
            for sentence in unit_texts:
                uid = unit_point_id(sentence)
                if uid not in unit_ids:
                    unit_ids.append(uid)
                if graph.holds_unit(uid):
                    continue
                plan.unit_texts.setdefault(uid, sentence)
            payload: ChunkPayload = {
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
                "chunk_key": pending.key_of[cid],
                **self._version_payload(plan, pending.doc_of[cid]),
                **citation_payload(piece.place, pending.source_of.get(cid)),
            }
            if self._settings.title_entities and normalize_entity(piece.title):
                eid = entity_point_id(piece.title)
                payload["title_entity_id"] = eid
                if graph.holds_entity(eid):
                    plan.kept_entities.add(eid)
                else:
                    plan.entities.setdefault(eid, (piece.title, "TITLE"))
            plan.chunks.append(StoredPoint(id=cid, payload=stored(payload)))
            plan.chunk_texts.append(piece.full_text)
            plan.chunk_parts.append(None if cid in llm_units else (piece.head, unit_texts))
        report.chunks_added = len(plan.chunks)
        report.chunks_removed = plan.removed_content
        report.units_added = len(plan.unit_texts)
        linked = {u for c in plan.chunks for u in chunk_payload(c)["unit_ids"]}
        report.units_kept = len(linked - plan.unit_texts.keys())

    def _version_payload(self, plan: RunPlan, doc_id: str) -> VersionPayload:
        return plan.versions[doc_id].payload(self._generation)

    def _new_pieces(
        self, docs: Sequence[Document], graph: Graph, report: IndexReport, plan: RunPlan, progress: Progress
    ) -> Pieces:
        """Chunk every document; sort it into unchanged (its stored version is this one), relabelled
        (the same chunks, other labels: a moved or re-hashed file, edited metadata) or replaced and
        new; sort the chunks of each new version into copied (content stored already) and new."""
        pending = Pieces()
        existing_by_doc = graph.doc_chunks()
        variant = chunk_variant(self._settings)
        file_docs = file_doc_counts(docs)
        for n, doc in enumerate(docs, start=1):
            pieces = chunk_document(
                self._text, doc, max_tokens=self._settings.chunk_tokens, overlap=self._settings.chunk_overlap
            )
            keys = [chunk_point_id(doc.id, p.index, p.text, variant) for p in pieces]
            provenance = _provenance(doc)
            pending.provenance[doc.id] = provenance
            labels = [_labels(provenance, piece) for piece in pieces]
            key = file_key(doc)
            # The root is left out of the version: a moved folder keeps its points (and their
            # ids); a file's set is known by its path under the root (cuerag.graph.serving).
            unrooted: list[dict[str, object]] = [{k: v for k, v in lb.items() if k != "root"} for lb in labels]
            version = doc_version(keys, unrooted, file_docs[key] if key is not None else None)
            pending.run_pieces.extend(zip(pieces, version.ids, strict=True))
            stored = stored_by_key(graph, doc.id, existing_by_doc.get(doc.id, []))
            old_ids = {p.id for p in stored.values()}
            if old_ids == set(version.ids):
                report.documents_unchanged += 1
                report.chunks_kept += len(keys)
                if relabel_in_place([stored[k] for k in keys], labels, doc.root):
                    plan.versions[doc.id] = version
                    plan.copied.extend(
                        (stored[k], pid, doc.id, lb) for k, pid, lb in zip(keys, version.ids, labels, strict=True)
                    )
                continue
            plan.versions[doc.id] = version
            plan.stale_chunks.extend(sorted(old_ids))
            if stored and set(stored) == set(keys):
                report.documents_unchanged += 1  # the same text: only what it carries changed
            elif stored:
                report.documents_replaced += 1
                _listed(report.changed_doc_ids, doc.id)
                plan.removed_content += len(set(stored) - set(keys))
            else:
                report.documents_added += 1
                _listed(report.added_doc_ids, doc.id)
            for piece, ckey, pid, label in zip(pieces, keys, version.ids, labels, strict=True):
                if ckey in stored:
                    # Copied into the new version, vector as is; the old point stays until the
                    # new version is complete.
                    plan.copied.append((stored[ckey], pid, doc.id, label))
                    report.chunks_kept += 1
                    continue
                if pid in pending.doc_of:
                    report.chunks_kept += 1
                    continue
                pending.doc_of[pid] = doc.id
                pending.key_of[pid] = ckey
                pending.source_of[pid] = doc.source
                pending.new.append((piece, pid))
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
        self, plan: RunPlan, graph: Graph, report: IndexReport, mentions: list[list[tuple[str, str]]]
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
                if graph.holds_entity(eid):
                    plan.kept_entities.add(eid)
                else:
                    plan.entities.setdefault(eid, (surface.strip(), label))
            plan.unit_entities[uid] = linked
        report.entities_added = len(plan.entities)
        report.entities_kept = len(plan.kept_entities)

    def _write(
        self,
        corpus: str,
        plan: RunPlan,
        graph: Graph,
        vectors: tuple[np.ndarray, np.ndarray, np.ndarray],
        progress: Progress,
    ) -> Written:
        entity_vecs, unit_vecs, chunk_vecs = vectors
        entity_points = [
            StoredPoint(
                id=eid, payload=stored(EntityPayload(name=name, norm=normalize_entity(name), label=label)), vector=v
            )
            for (eid, (name, label)), v in zip(plan.entities.items(), entity_vecs, strict=True)
        ]
        unit_points = [
            StoredPoint(
                id=uid, payload=stored(UnitPayload(text=text, entity_ids=plan.unit_entities.get(uid, []))), vector=v
            )
            for (uid, text), v in zip(plan.unit_texts.items(), unit_vecs, strict=True)
        ]
        chunk_points = [
            StoredPoint(id=c.id, payload=c.payload, vector=v) for c, v in zip(plan.chunks, chunk_vecs, strict=True)
        ]
        chunk_points += copied_points(plan.copied, plan.versions, self._generation)
        total = len(entity_points) + len(unit_points) + len(chunk_points)
        remaining = estimated_bytes([*entity_points, *unit_points, *chunk_points])
        done = 0
        size = min(self._settings.write_batch, _WRITE_BATCH)
        # Order matters for crash safety: a chunk is written only after what it points to.
        for kind, points in ((ENTITIES, entity_points), (UNITS, unit_points), (CHUNKS, chunk_points)):
            name = collection_name(corpus, kind)
            if kind == CHUNKS:
                # The last stop: past here chunks land and the run's documents become visible.
                self._checkpoint("before storing chunks")
            for start in range(0, len(points), size):
                batch = points[start : start + size]
                if kind != CHUNKS:
                    self._checkpoint(f"while storing {kind}")
                # Before every batch, chunks included: other programs fill the same disk, and a
                # write into a full disk kills the process (SIGBUS). A run stopped between chunk
                # batches serves none of its incomplete documents (cuerag.graph.serving).
                self._require_space(remaining)
                self._store.upsert(name, batch)
                remaining -= estimated_bytes(batch)
                done += len(batch)
                progress("store", done, total)
        # Replaced versions go last, once their successors are complete; in batches too, and a run
        # killed among them leaves versions that lost already (never served, deleted when found).
        for start in range(0, len(plan.stale_chunks), size):
            self._store.delete(collection_name(corpus, CHUNKS), plan.stale_chunks[start : start + size])
        return Written(chunk_points, unit_points, entity_points, plan.stale_chunks)

    def _require_space(self, needed: int) -> None:
        if self._space is not None:
            self._space.require(max(needed, 0), "this index run")
