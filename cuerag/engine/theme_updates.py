"""The theme hierarchy kept with the corpus: after every run that changes a corpus (and after a
rerun of one a kill cut short, whose hierarchy is stale), the stored hierarchy is updated from the
new snapshot (`cuerag.communities.live`) and written back (`cuerag.communities.stored`), under the
run's writer lock."""

from __future__ import annotations

import logging
import time

from cuerag.communities.live import update_themes
from cuerag.communities.stored import load_themes, write_themes
from cuerag.engine.parts import EngineParts
from cuerag.graph.schema import CHUNKS, collection_name
from cuerag.graph.snapshot import Graph
from cuerag.index.report import ThemesReport

log = logging.getLogger(__name__)


def update_stored_themes(parts: EngineParts, corpus: str, graph: Graph) -> ThemesReport | None:
    """Bring the corpus's stored hierarchy up to `graph` (None when themes are off)."""
    if not parts.settings.themes:
        return None
    started = time.perf_counter()
    store = parts.store
    update = update_themes(graph, load_themes(store, corpus))
    dim = store.collection_dim(collection_name(corpus, CHUNKS))
    counts = write_themes(store, corpus, update.themes, dim=dim, batch=parts.settings.write_batch)
    levels = {r.level for r in update.themes.reports.values()}
    report = ThemesReport(
        communities=len(update.themes.reports),
        levels=len(levels),
        written=counts.written,
        removed=counts.removed,
        drift=update.drift,
        noise=update.themes.noise,
        rebuilt=update.rebuilt,
        unmeasured=update.unmeasured,
        seconds=round(time.perf_counter() - started, 3),
    )
    if counts.written or counts.removed:
        log.info("themes of %s: %s", corpus, report.model_dump())
    return report
