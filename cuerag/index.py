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

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel

from cuerag.chunking import chunk_document
from cuerag.citations import citation_payload
from cuerag.config import Settings
from cuerag.documents import Document
from cuerag.entities import normalize_entity
from cuerag.extraction import ChunkText, UnitExtractor
from cuerag.graph import CHUNKS, ENTITIES, UNITS, Graph, collection_name
from cuerag.ids import chunk_point_id, entity_point_id, unit_point_id
from cuerag.llm import LLM, LLMUsage, require_llm
from cuerag.models import Models
from cuerag.selection import bleu_values, cosine_values, random_values, select_chunks
from cuerag.store.base import StoredPoint, VectorStore
from cuerag.text import TextChunk, TextTools

log = logging.getLogger(__name__)

_WRITE_BATCH = 256
_EMBED_SLICE = 512

Progress = Callable[[str, int, int], None]
"""A progress sink: (stage, done, total)."""


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


class IndexReport(BaseModel):
    """What an index run did, and what the corpus holds afterwards."""

    corpus: str
    documents_added: int = 0
    documents_unchanged: int = 0
    documents_replaced: int = 0
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


@dataclass
class _Pieces:
    """The chunks of one run's documents: all of them (for selection) and the new ones."""

    run_pieces: list[tuple[TextChunk, str]] = field(default_factory=list)
    new: list[tuple[TextChunk, str]] = field(default_factory=list)
    doc_of: dict[str, str] = field(default_factory=dict)  # new chunk id -> document id
    source_of: dict[str, str | None] = field(default_factory=dict)  # new chunk id -> document source


@dataclass
class _Plan:
    """The points one run will write, before their vectors are computed."""

    chunks: list[StoredPoint] = field(default_factory=list)
    chunk_texts: list[str] = field(default_factory=list)
    unit_texts: dict[str, str] = field(default_factory=dict)  # id -> text, new units only
    unit_entities: dict[str, list[str]] = field(default_factory=dict)
    entities: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (name, label), new only
    kept_entities: set[str] = field(default_factory=set)  # existing entities the new units mention
    stale_chunks: list[str] = field(default_factory=list)


class Indexer:
    """Runs CUE-Index for one corpus against the current graph snapshot."""

    def __init__(
        self, *, settings: Settings, models: Models, text: TextTools, store: VectorStore, llm: LLM | None = None
    ) -> None:
        self._settings = settings
        self._models = models
        self._text = text
        self._store = store
        self._llm = llm

    def run(
        self, corpus: str, docs: Sequence[Document], graph: Graph, *, progress: Progress | None = None
    ) -> tuple[IndexReport, Written]:
        """Index `docs` into `corpus`. Unchanged documents are skipped; a document whose id exists
        with other text replaces its old chunks."""
        progress = progress or _no_progress
        report = IndexReport(corpus=corpus)
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
            with _timed(report, "select"):
                chosen = self._select(pending.run_pieces)
            with _timed(report, "extract"):
                llm_units = self._extract([(p, cid) for p, cid in pending.new if cid in chosen], report, progress)
        else:
            llm_units = {}
        with _timed(report, "split"):
            self._plan_chunks(pending, llm_units, plan, graph, report)
        with _timed(report, "ner"):
            self._plan_entities(plan, graph, report, progress)
        with _timed(report, "embed"):
            entity_vecs = self._embed("embed entities", [n for n, _ in plan.entities.values()], progress)
            unit_vecs = self._embed("embed units", list(plan.unit_texts.values()), progress)
            chunk_vecs = self._embed("embed chunks", plan.chunk_texts, progress)
        with _timed(report, "store"):
            written = self._write(corpus, plan, entity_vecs, unit_vecs, chunk_vecs, progress)

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
        report.chunks_added = len(plan.chunks)
        report.chunks_removed = len(plan.stale_chunks)
        report.units_added = len(plan.unit_texts)
        linked = {u for c in plan.chunks for u in c.payload["unit_ids"]}
        report.units_kept = len(linked - plan.unit_texts.keys())

    def _new_pieces(
        self, docs: Sequence[Document], graph: Graph, report: IndexReport, plan: _Plan, progress: Progress
    ) -> _Pieces:
        """Chunk every document; sort its chunks into unchanged, replaced and new."""
        pending = _Pieces()
        existing_by_doc = graph.doc_chunks()
        variant = "title-entities" if self._settings.title_entities else ""
        for n, doc in enumerate(docs, start=1):
            pieces = chunk_document(
                self._text, doc, max_tokens=self._settings.chunk_tokens, overlap=self._settings.chunk_overlap
            )
            ids = [chunk_point_id(doc.id, p.index, p.text, variant) for p in pieces]
            pending.run_pieces.extend(zip(pieces, ids, strict=True))
            old = {graph.chunk_ids[c] for c in existing_by_doc.get(doc.id, [])}
            if old and old == set(ids):
                report.documents_unchanged += 1
                report.chunks_kept += len(ids)
                continue
            if old:
                report.documents_replaced += 1
                plan.stale_chunks.extend(sorted(old - set(ids)))
            else:
                report.documents_added += 1
            for piece, cid in zip(pieces, ids, strict=True):
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

    def _plan_entities(self, plan: _Plan, graph: Graph, report: IndexReport, progress: Progress) -> None:
        texts = list(plan.unit_texts.values())
        ids = list(plan.unit_texts.keys())
        for start in range(0, len(texts), _EMBED_SLICE):
            mentions = self._models.ner.extract(texts[start : start + _EMBED_SLICE])
            for uid, found in zip(ids[start : start + _EMBED_SLICE], mentions, strict=True):
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
            progress("ner", min(start + _EMBED_SLICE, len(texts)), len(texts))
        report.entities_added = len(plan.entities)
        report.entities_kept = len(plan.kept_entities)

    def _embed(self, stage: str, texts: list[str], progress: Progress) -> np.ndarray:
        embedder = self._models.embedder
        out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
        # Texts of similar length share a batch, so little time goes into padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(texts), _EMBED_SLICE):
            rows = order[start : start + _EMBED_SLICE]
            out[rows] = embedder.encode([texts[i] for i in rows], batch_size=self._settings.embed_batch_size)
            progress(stage, min(start + _EMBED_SLICE, len(texts)), len(texts))
        return out

    def _write(
        self,
        corpus: str,
        plan: _Plan,
        entity_vecs: np.ndarray,
        unit_vecs: np.ndarray,
        chunk_vecs: np.ndarray,
        progress: Progress,
    ) -> Written:
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
        total = len(entity_points) + len(unit_points) + len(chunk_points)
        done = 0
        # Order matters for crash safety: a chunk is written only after what it points to.
        for kind, points in ((ENTITIES, entity_points), (UNITS, unit_points), (CHUNKS, chunk_points)):
            name = collection_name(corpus, kind)
            for start in range(0, len(points), _WRITE_BATCH):
                batch = points[start : start + _WRITE_BATCH]
                self._store.upsert(name, batch)
                done += len(batch)
                progress("store", done, total)
        # Replaced chunks go last, once their successors are stored.
        self._store.delete(collection_name(corpus, CHUNKS), plan.stale_chunks)
        return Written(chunk_points, unit_points, entity_points, plan.stale_chunks)


@contextmanager
def _timed(report: IndexReport, stage: str) -> Iterator[None]:
    """Add the block's time to the stage's (a stage may run in more than one step)."""
    start = time.perf_counter()
    yield
    spent = time.perf_counter() - start
    report.stage_seconds[stage] = round(report.stage_seconds.get(stage, 0.0) + spent, 3)
