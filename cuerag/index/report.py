"""What an index run reports (`IndexReport`) and what it wrote (`Written`), with the callbacks a
caller follows a run by (progress, stop)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pydantic import BaseModel

from cuerag.ingest.artefacts import LeftOut
from cuerag.ingest.folders import FileOutcome
from cuerag.llm.client import LLMUsage
from cuerag.store.base import StoredPoint

Progress = Callable[[str, int, int], None]

ShouldStop = Callable[[], bool]


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


class ThemeSummariesReport(BaseModel):
    """What the LLM wrote for the theme hierarchy in one run (cuerag.communities.summaries): the
    communities it was asked about (those whose report is new or changed, or that lack an LLM
    title), how many got one, how many kept their extractive title (an unusable answer, or the LLM
    failing), what it cost, and the failure that made the run stop asking, if any."""

    requested: int = 0
    written: int = 0
    fallback: int = 0
    usage: LLMUsage = LLMUsage()
    seconds: float = 0.0
    problem: str = ""


class ThemesReport(BaseModel):
    """What a run did to the corpus's theme hierarchy (cuerag.communities.live): its size, the
    communities whose report it wrote, the stored points it removed, how far the hierarchy had
    drifted from a fresh build (1 − mean best Jaccard of its leaves), whether it was rebuilt, and
    what it cost."""

    communities: int = 0
    levels: int = 0
    written: int = 0
    removed: int = 0
    drift: float = 0.0
    noise: float = 0.0  # Leiden's own drift on this corpus (another seed): a rebuild comes 0.15 above it
    rebuilt: bool = False
    # Documents added, changed or deleted since drift was measured: below 5 % of the corpus an
    # update carries the last measure instead of clustering the whole corpus again.
    unmeasured: int = 0
    seconds: float = 0.0
    summaries: ThemeSummariesReport | None = None  # None without an LLM (or with theme_summaries off)


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
    themes: ThemesReport | None = None  # None when the run changed nothing or themes are off
    llm_usage: dict[str, LLMUsage] = {}  # per stage; empty at alpha 0
    # Runs over files and folders (`CueRag.index_paths`): what happened to each file.
    documents_removed: int = 0  # by a sync: documents of files gone from the folder
    added: list[FileOutcome] = []  # files read for the first time
    changed: list[FileOutcome] = []  # files whose content hash changed: read again, their documents replaced
    removed: list[FileOutcome] = []  # files gone from a synced folder: their documents deleted
    # How the embedder ran and why (cuerag.models.precision, cuerag.models.loading.load_embedder).
    embedder_backend: str = ""
    embedder_precision: str = ""
    embedder_precision_reason: str = ""
    chunk_vectors: str = ""  # embedded or derived (cuerag.index.chunk_vectors)
    skipped: list[FileOutcome] = []  # files whose content hash is unchanged: not read
    # Unchanged files whose stored links an older version resolved from the wrong folder (a folder
    # named by a relative path, issue 30): read again and their links re-resolved, nothing embedded.
    repaired: int = 0
    failed: list[FileOutcome] = []  # files that could not be read, with the reason; the rest went on
    warnings: list[FileOutcome] = []  # what the walk read only in part: a .gitignore not read, lines of one
    passed_over: dict[str, int] = {}  # files of walked folders in formats not read, by suffix
    # How many files each list above holds in all; the lists hold the first 100 of each, unchanged
    # files none, unless the run was asked for a full report (cuerag.index.report_bounds), and
    # `lists_cut` says a list was shortened (unchanged files left out are no cut: they are never listed).
    files: dict[str, int] = {}
    lists_cut: bool = False
    # Generator artefacts, vendored folders and walked JSON that is no corpus, by reason: a count
    # and the first few paths (cuerag.ingest.artefacts).
    left_out: list[LeftOut] = []


def _listed(ids: list[str], doc_id: str) -> None:
    if len(ids) < REPORTED_IDS:
        ids.append(doc_id)


@contextmanager
def _timed(report: IndexReport, stage: str) -> Iterator[None]:
    """Add the block's time to the stage's (a stage may run in more than one step)."""
    start = time.perf_counter()
    yield
    spent = time.perf_counter() - start
    report.stage_seconds[stage] = round(report.stage_seconds.get(stage, 0.0) + spent, 3)
