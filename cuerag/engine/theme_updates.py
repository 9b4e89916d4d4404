"""The theme hierarchy kept with the corpus: after every run that changes a corpus (and after a
rerun of one a kill cut short, whose hierarchy is stale), the stored hierarchy is updated from the
new snapshot (`cuerag.communities.live`), given LLM titles and summaries where an LLM is
configured and a theme lacks them (`cuerag.communities.summaries`), and written back
(`cuerag.communities.stored`), under the run's writer lock."""

from __future__ import annotations

import dataclasses
import logging
import time

from cuerag.communities.live import update_themes
from cuerag.communities.stored import ThemeSet, load_themes, write_themes
from cuerag.communities.summaries import SummaryWriter
from cuerag.engine.parts import EngineParts
from cuerag.graph.schema import CHUNKS, collection_name
from cuerag.graph.snapshot import Graph
from cuerag.index.report import Progress, ShouldStop, ThemesReport, ThemeSummariesReport

log = logging.getLogger(__name__)


def update_stored_themes(
    parts: EngineParts,
    corpus: str,
    graph: Graph,
    *,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
) -> ThemesReport | None:
    """Bring the corpus's stored hierarchy up to `graph` (None when themes are off); `progress` and
    `should_stop` reach the LLM summaries, the one part that can take long."""
    if not parts.settings.themes:
        return None
    started = time.perf_counter()
    store = parts.store
    update = update_themes(graph, load_themes(store, corpus))
    themes, summaries = _summarized(parts, update.themes, progress, should_stop)
    dim = store.collection_dim(collection_name(corpus, CHUNKS))
    counts = write_themes(store, corpus, themes, dim=dim, batch=parts.settings.write_batch)
    levels = {r.level for r in themes.reports.values()}
    report = ThemesReport(
        communities=len(themes.reports),
        levels=len(levels),
        written=counts.written,
        removed=counts.removed,
        drift=update.drift,
        noise=themes.noise,
        rebuilt=update.rebuilt,
        unmeasured=update.unmeasured,
        seconds=round(time.perf_counter() - started, 3),
        summaries=summaries,
    )
    if counts.written or counts.removed or (summaries is not None and summaries.requested):
        log.info("themes of %s: %s", corpus, report.model_dump())
    return report


def _summarized(
    parts: EngineParts, themes: ThemeSet, progress: Progress | None, should_stop: ShouldStop | None
) -> tuple[ThemeSet, ThemeSummariesReport | None]:
    """`themes` with LLM titles and summaries where they are missing; unchanged without an LLM."""
    if parts.llm is None or not parts.settings.theme_summaries:
        return themes, None
    writer = SummaryWriter(parts.llm, concurrency=parts.settings.llm_concurrency)
    reports, summaries = writer.write(themes.reports, progress=progress, should_stop=should_stop)
    return dataclasses.replace(themes, reports=reports), summaries
