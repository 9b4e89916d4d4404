"""Link data stored by a version that resolved it wrongly, found so the next run can repair it.

Up to issue 30, a folder named by a relative path (`cuerag index docs/`, `.`) or through a
symlinked folder gave the readers the file's bare name as its source, so each link was resolved
against the indexed root instead of the file's own folder, and stored so. The file's bytes (and
so its content hash) are the same: a sync would skip it forever. A link's stored `doc_id` is a pure
function of its `target` and the chunk's `source` (`resolve_target`, the one rule every reader
uses), so a stored link that disagrees with that rule today is stale, whatever wrote it."""

from __future__ import annotations

from cuerag.graph.schema import ChunkPayload
from cuerag.ingest.formats.targets import resolve_target


def has_stale_links(payload: ChunkPayload) -> bool:
    """Whether a stored chunk holds a path link resolved otherwise than from its own source."""
    source = payload.get("source")
    if not source:
        return False  # an inline document: its links were never resolved
    for link in payload.get("links", []):
        target = link.get("target")
        if link.get("wiki") or target is None:
            continue  # wikilinks are matched by name when the graph is built, not stored resolved
        if resolve_target(target, source) != link.get("doc_id"):
            return True
    return False
