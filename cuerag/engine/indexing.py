"""Index runs on a corpus: documents or files in, a delete, a drop; each under the corpus's writer
lock, each ending with the next snapshot swapped in (or, when it fails, the store as a killed run
would leave it, which the next open or run repairs)."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from cuerag.communities.stored import drop_themes
from cuerag.engine.parts import EngineParts
from cuerag.engine.reports import DeleteReport
from cuerag.engine.snapshots import collect_orphans
from cuerag.engine.theme_updates import update_stored_themes
from cuerag.errors import Cancelled, CueRagError, InvalidNameError, NothingIndexed, ParameterError, StorageFullError
from cuerag.graph.schema import CHUNKS, KINDS, collection_name, validate_corpus_name
from cuerag.graph.snapshot import Graph, current_versions, load_graph, updated_graph
from cuerag.index.deletion import plan_deletion
from cuerag.index.pipeline import Indexer
from cuerag.index.report import REPORTED_IDS, IndexReport, Progress, ShouldStop, ThemesReport
from cuerag.index.report_bounds import count_files, cut_lists
from cuerag.index.stamps import index_shape
from cuerag.index.sync import no_files_error, plan_sync
from cuerag.ingest.documents import Document, check_documents, dedupe_documents
from cuerag.ingest.folders import FileCheck, WalkRules, walk_paths
from cuerag.ingest.formats.reading import ByteBudget, limits_of
from cuerag.llm.client import require_llm
from cuerag.store.diskspace import MB, SpaceGuard

log = logging.getLogger(__name__)


class IndexRuns:
    def __init__(self, parts: EngineParts) -> None:
        self._p = parts

    def drop_corpus(self, corpus: str) -> None:
        self._p.snapshots.require_corpus(corpus)
        with self._p.snapshots.writer(corpus):
            self._drop(corpus)

    def _drop(self, corpus: str) -> None:
        for kind in KINDS:  # chunks first: the corpus stops being listed before the rest goes
            name = collection_name(corpus, kind)
            if self._p.store.has_collection(name):
                self._p.store.drop_collection(name)
        drop_themes(self._p.store, corpus)
        self._p.snapshots.forget(corpus)

    def index_documents(
        self,
        corpus: str,
        documents: Sequence[Document],
        *,
        progress: Progress | None = None,
        should_stop: ShouldStop | None = None,
    ) -> IndexReport:
        """Add documents to a corpus (created if new). Unchanged documents cost nothing.
        `should_stop` is asked between stages and batches; when it says True the run stops with
        `Cancelled`, having made nothing of itself visible."""
        validate_corpus_name(corpus)
        docs = check_documents(dedupe_documents(documents))
        if self._p.settings.alpha > 0:
            require_llm(self._p.llm, f"alpha={self._p.settings.alpha}")  # before anything is created
        with self._p.snapshots.writer(corpus):
            report = self._index_locked(corpus, docs, progress, should_stop)
        log.info("indexed %s: %s", corpus, report.model_dump(exclude={"totals", "stage_seconds"}))
        return report

    def _index_locked(
        self, corpus: str, docs: Sequence[Document], progress: Progress | None, should_stop: ShouldStop | None
    ) -> IndexReport:
        """One index run; the caller holds the corpus's writer lock."""
        p = self._p
        dim = p.models.embedder.dim
        created = not p.store.has_collection(collection_name(corpus, CHUNKS))
        if created:
            self._refuse_case_twin(corpus)
        else:
            p.checks.dim(corpus, p.store.collection_dim(collection_name(corpus, CHUNKS)), p.models)
        space = self._space_guard()
        if created and space is not None:
            space.require_collections(len(KINDS), f"creating corpus {corpus!r}")
        # The chunks collection is what lists a corpus (`corpora`, `require_corpus`): created last,
        # so a run killed between two creations leaves no corpus a reader would open and find
        # incomplete (the rerun creates the rest); `_drop` removes it first for the same reason.
        for kind in sorted(KINDS, key=lambda k: k == CHUNKS):
            p.store.create_collection(collection_name(corpus, kind), dim)
        graph = p.snapshots.graph(corpus)
        if not created:
            p.checks.vectors(corpus, graph, p.models, indexing=True)
            p.checks.chunk_vectors(corpus, graph, p.settings, p.models)
        indexer = Indexer(
            settings=p.settings,
            models=p.models,
            text=p.text,
            store=p.store,
            llm=p.llm,
            space=space,
            should_stop=should_stop,
        )
        try:
            report, written = indexer.run(corpus, docs, graph, progress=progress)
        except BaseException:
            # A new corpus whose first run failed before any chunk landed is not left behind
            # as an empty corpus. Otherwise the snapshot is dropped: the next use rebuilds it
            # from the store, seeing what the failed run wrote (as orphans to collect).
            p.snapshots.forget(corpus)  # first, whatever happens below
            if created and self._nothing_served(corpus):
                self._drop_after_failure(corpus)
            elif isinstance(sys.exc_info()[1], Cancelled | StorageFullError):
                # A stop the engine chose: clear what the run wrote now, not at next open.
                self._discard_run(corpus)
            raise
        orphans = graph.orphan_unit_ids or graph.orphan_entity_ids or graph.orphan_chunk_ids
        if not (written.chunks or written.removed_chunks or orphans):
            report.totals = graph.sizes
            # Nothing changed, but a killed run may have left the hierarchy behind the snapshot.
            report.themes = self._themes(report, corpus, graph, progress, should_stop)
            return report  # nothing changed: the snapshot stands
        updated = updated_graph(
            graph,
            chunks=written.chunks,
            units=written.units,
            entities=written.entities,
            removed_chunks=written.removed_chunks,
        )
        fresh = self._collected(corpus, updated, earlier=graph)[0]
        report.totals = fresh.sizes
        report.themes = self._themes(report, corpus, fresh, progress, should_stop)
        return report

    def _themes(
        self,
        report: IndexReport,
        corpus: str,
        graph: Graph,
        progress: Progress | None,
        should_stop: ShouldStop | None,
    ) -> ThemesReport | None:
        themes = update_stored_themes(self._p, corpus, graph, progress=progress, should_stop=should_stop)
        if themes is not None:
            report.stage_seconds["themes"] = themes.seconds
        return themes

    def _nothing_served(self, corpus: str) -> bool:
        """Whether a corpus holds no document a reader would see (a failed first run's leftovers)."""
        try:
            chunks = self._p.store.scroll(collection_name(corpus, CHUNKS), with_vectors=False)
            return not current_versions(chunks)[0]
        except CueRagError:
            return True  # unreadable: nothing a reader could be served either
        except Exception as exc:  # unforeseen: keep the corpus (the next open repairs it), keep the run's error
            log.warning("could not read corpus %r after a failed first run: %s", corpus, exc)
            return False

    def _drop_after_failure(self, corpus: str) -> None:
        """Drop what a failed first run created. On a disk that went read-only this fails too: the
        run's own error is the one to report, so this one is logged, not raised."""
        try:
            self._drop(corpus)
        except (CueRagError, OSError) as exc:
            log.warning("could not remove the corpus %r a failed first run created: %s", corpus, exc)
            self._p.snapshots.forget(corpus)

    def _collected(self, corpus: str, graph: Graph, *, earlier: Graph) -> tuple[Graph, int, int]:
        """`collect_orphans`, and the result made the corpus's snapshot."""
        fresh, units, entities = collect_orphans(self._p.store, corpus, graph, earlier=earlier)
        self._p.snapshots.put(corpus, fresh)
        return fresh, units, entities

    def _refuse_case_twin(self, corpus: str) -> None:
        """A new corpus may not differ from an existing one only in case: on a case-insensitive
        filesystem (macOS, where desktop MCP hosts run; Windows) the two would be one folder, so a
        data directory made on Linux must not hold both."""
        twins = [c for c in self._p.snapshots.corpora() if c != corpus and c.casefold() == corpus.casefold()]
        if twins:
            raise InvalidNameError(
                f"corpus name {corpus!r} differs from the existing corpus {twins[0]!r} only in case; on "
                f"case-insensitive filesystems (macOS, Windows) they would be the same, so use {twins[0]!r} "
                "itself or another name"
            )

    def _space_guard(self) -> SpaceGuard | None:
        """The free-space check for the embedded store (a Qdrant server minds its own disk)."""
        settings = self._p.settings
        if settings.qdrant_url:
            return None
        return SpaceGuard(settings.data_dir, settings.min_free_mb * MB, self._p.free_bytes)

    def _discard_run(self, corpus: str) -> None:
        """After a run stopped under the writer lock: delete what it wrote (none of it is live)."""
        graph = load_graph(self._p.store, corpus, dim=self._p.models.embedder.dim)
        self._collected(corpus, graph, earlier=graph)

    def index_paths(
        self,
        corpus: str,
        paths: Sequence[str | Path],
        *,
        documents: Sequence[Document] = (),
        sync: bool = False,
        strict: bool = False,
        rules: WalkRules | None = None,
        check: FileCheck | None = None,
        progress: Progress | None = None,
        should_stop: ShouldStop | None = None,
        known_failures: Mapping[str, str] | None = None,
        full_report: bool = False,
    ) -> IndexReport:
        """Index files and folders (plus any inline `documents`) into a corpus; see `CueRag.index_paths`."""
        p = self._p
        validate_corpus_name(corpus)
        started = time.perf_counter()
        walk = walk_paths(
            paths,
            rules=rules,
            check=check,
            should_stop=should_stop,
            skip=[p.settings.data_dir],
            max_files=p.settings.max_files_per_request,
        )
        if not walk.files and not walk.failed and not sync and not documents:
            raise no_files_error(paths, walk.left_out)
        if p.settings.alpha > 0:
            require_llm(p.llm, f"alpha={p.settings.alpha}")
        with p.snapshots.writer(corpus):
            exists = p.store.has_collection(collection_name(corpus, CHUNKS))
            loading = time.perf_counter()
            graph = p.snapshots.graph(corpus) if exists else None  # read from the store on a process's first use
            load_seconds = time.perf_counter() - loading
            plan = plan_sync(
                walk,
                graph,
                sync=sync,
                strict=strict,
                shape=index_shape(p.settings),
                check=check,
                limits=limits_of(p.settings),
                budget=ByteBudget(p.settings.max_request_bytes),
                known_failures=known_failures,
                should_stop=should_stop,
            )
            read_seconds = time.perf_counter() - started - load_seconds  # walk, hash, parse
            inline = check_documents(documents) if documents else []
            docs = dedupe_documents([*plan.documents, *inline])
            if not docs and not plan.remove and not plan.skipped:
                # Nothing could be read and nothing was there already: an error, not an empty report.
                if plan.failed:
                    raise NothingIndexed([(f.path, f.reason) for f in plan.failed])
                if not exists:
                    raise no_files_error(paths, plan.left_out)
            served_before = graph.doc_chunks() if graph is not None else {}
            if docs:
                report = self._index_locked(corpus, docs, progress, should_stop)
            else:
                report = IndexReport(corpus=corpus, totals=p.snapshots.graph(corpus).sizes)
                if not plan.remove:  # a rerun after a kill in the theme update completes it here
                    report.themes = self._themes(report, corpus, p.snapshots.graph(corpus), progress, should_stop)
            if plan.remove:
                # Records gone from a file that changed went with its old set of documents, when its
                # new set was stored (cuerag.graph.serving): removed all the same.
                now = p.snapshots.graph(corpus).doc_chunks()
                gone = [d for d in plan.remove if d in served_before and d not in now]
                deleted = self._delete_locked(corpus, [d for d in plan.remove if d in now])
                removed = [*gone, *deleted.documents_deleted]
                report.documents_removed = len(removed)
                report.removed_doc_ids = removed[:REPORTED_IDS]
                report.chunks_removed += deleted.chunks_deleted + sum(len(served_before[d]) for d in gone)
                report.totals = deleted.totals
                report.themes = deleted.themes or report.themes
        report.added, report.changed, report.removed = plan.added, plan.changed, plan.removed
        report.skipped, report.failed = plan.skipped, plan.failed
        report.repaired = len(plan.repaired)
        report.left_out = plan.left_out.report()
        report.warnings, report.passed_over = plan.warnings, plan.passed_over
        report.documents_unchanged += plan.unchanged_documents
        report.chunks_kept += plan.unchanged_chunks
        report.stage_seconds = {"load": round(load_seconds, 3), "read": round(read_seconds, 3), **report.stage_seconds}
        report.elapsed_seconds = round(time.perf_counter() - started, 3)
        log.info(
            "indexed %s: %d files added, %d changed, %d removed, %d unchanged, %d repaired, %d failed",
            corpus,
            len(plan.added),
            len(plan.changed),
            len(plan.removed),
            len(plan.skipped),
            len(plan.repaired),
            len(plan.failed),
        )
        count_files(report)
        return report if full_report else cut_lists(report)

    def delete_documents(self, corpus: str, doc_ids: Sequence[str]) -> DeleteReport:
        """Delete documents: their chunks go, then the units and entities no other chunk reaches.
        The snapshot is updated from the removal; nothing is re-read or re-indexed."""
        self._p.snapshots.require_corpus(corpus)
        if not doc_ids:
            raise ParameterError("no document ids given")
        with self._p.snapshots.writer(corpus):
            return self._delete_locked(corpus, doc_ids)

    def _delete_locked(self, corpus: str, doc_ids: Sequence[str]) -> DeleteReport:
        try:
            return self._delete_batches(corpus, doc_ids)
        except BaseException:
            # Part of the batches may be in the store: the next use reads it again, as after a kill.
            self._p.snapshots.forget(corpus)
            raise

    def _delete_batches(self, corpus: str, doc_ids: Sequence[str]) -> DeleteReport:
        graph = self._p.snapshots.graph(corpus)
        by_doc = graph.doc_chunks()
        deletion = plan_deletion(graph, doc_ids)
        name = collection_name(corpus, CHUNKS)
        size = self._p.settings.write_batch
        # In batches, the smaller file sets first: a kill between any two leaves each document and
        # each file's set of documents whole or gone (cuerag.index.deletion).
        for start in range(0, len(deletion.rewritten), size):
            self._p.store.upsert(name, deletion.rewritten[start : start + size])
        for start in range(0, len(deletion.chunk_ids), size):
            self._p.store.delete(name, deletion.chunk_ids[start : start + size])
        loaded = updated_graph(graph, chunks=deletion.rewritten, removed_chunks=deletion.chunk_ids)
        fresh, units_removed, entities_removed = self._collected(corpus, loaded, earlier=graph)
        themes = update_stored_themes(self._p, corpus, fresh)
        return DeleteReport(
            corpus=corpus,
            documents_deleted=deletion.found,
            not_found=[d for d in doc_ids if d not in set(deletion.found)],
            chunks_deleted=sum(len(by_doc[d]) for d in deletion.found),
            units_removed=units_removed,  # the deleted documents' own, and any a killed run left
            entities_removed=entities_removed,
            totals=fresh.sizes,
            themes=themes,
        )
