"""A corpus's theme hierarchy in the store: one point per community (its report as payload, its
vector, its level filterable), and one manifest point naming the points of the current hierarchy.

Writes are ordered so that a kill anywhere leaves a consistent hierarchy: the new communities'
points first (content-addressed ids, so an unchanged report is the same point and is not
rewritten), then the manifest, which switches readers to them at once, then the points no
manifest names any more are deleted (and swept again by every later write, which cleans up after
a kill between the last two steps). A reader loads only what the manifest names.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cuerag.communities.documents import DocTable
from cuerag.communities.hierarchy import Community, Hierarchy
from cuerag.communities.reports import Evidence, Report
from cuerag.graph.schema import (
    THEMES,
    ThemeManifestPayload,
    ThemePayload,
    collection_name,
    stored,
    theme_manifest_payload,
    theme_payload,
)
from cuerag.graph.snapshot import Graph
from cuerag.store.base import PointFilter, StoredPoint, VectorStore

_NAMESPACE = uuid.UUID("0b6f3c1e-5a57-4d1f-9d59-7c0e2a6b7e51")
MANIFEST_ID = str(uuid.uuid5(_NAMESPACE, "manifest"))


@dataclass(frozen=True)
class ThemeSet:
    """A hierarchy as stored: reports by community id, and what the manifest says of it."""

    reports: dict[str, Report]
    doc_versions: dict[str, str]  # document id -> the version the hierarchy was built from
    next_ids: dict[int, int]  # level -> the next unused id number at that level
    drift: float = 0.0
    noise: float = 0.0  # the drift between this build and one with another seed (live.REBUILD_MARGIN)
    unmeasured: int = 0  # documents added, changed or deleted since `drift` was measured (live.DRIFT_CHECK_SHARE)

    def point_ids(self) -> dict[str, str]:
        return {tid: point_id(report) for tid, report in self.reports.items()}


def stored_hierarchy(themes: ThemeSet, docs: DocTable) -> Hierarchy:
    """The stored hierarchy over the snapshot's documents: documents no longer served (deleted by
    a run whose theme update a kill cut short) are left out, and the communities they emptied."""
    pos = {doc: d for d, doc in enumerate(docs.doc_ids)}
    communities = {
        tid: Community(
            id=tid,
            level=r.level,
            members=sorted(pos[d] for d in r.documents if d in pos),
            parent=r.parent,
            children=list(r.children),
        )
        for tid, r in themes.reports.items()
    }
    kept = {cid: c for cid, c in communities.items() if c.members}
    for c in kept.values():
        c.children = [k for k in c.children if k in kept]
        if c.parent is not None and c.parent not in kept:
            c.parent = None
    return Hierarchy(communities=dict(sorted(kept.items())))


def served_reports(themes: ThemeSet, hierarchy: Hierarchy, docs: DocTable) -> dict[str, Report]:
    """The stored reports limited to `hierarchy` (from `stored_hierarchy`): no document that is
    not served is listed or cited."""
    served = set(docs.doc_ids)
    out = {}
    for cid, c in hierarchy.communities.items():
        r = themes.reports[cid]
        out[cid] = dataclasses.replace(
            r,
            evidence=[e for e in r.evidence if e.doc_id in served],
            documents=[docs.doc_ids[m] for m in c.members],
            parent=c.parent,
            children=list(c.children),
        )
    return out


def doc_versions(graph: Graph, docs: DocTable) -> dict[str, str]:
    """A short fingerprint of each document's stored version: its chunk point ids (which carry the
    version), hashed."""
    out = {}
    for doc, chunks in zip(docs.doc_ids, docs.doc_chunks, strict=True):
        ids = "\n".join(sorted(graph.chunk_ids[c] for c in chunks))
        out[doc] = hashlib.blake2b(ids.encode(), digest_size=8).hexdigest()
    return out


def report_payload(report: Report) -> ThemePayload:
    payload = ThemePayload(
        theme_id=report.id,
        level=report.level,
        title=report.title,
        terms=list(report.terms),
        entities=list(report.entities),
        evidence=[
            {"unit_id": e.unit_id, "chunk_id": e.chunk_id, "doc_id": e.doc_id, "text": e.text} for e in report.evidence
        ],
        documents=list(report.documents),
        parent=report.parent,
        children=list(report.children),
    )
    # Only when written: a report without them is stored (and content-addressed) as before.
    if report.llm_title is not None and report.llm_summary is not None and report.llm_model is not None:
        payload["llm_title"] = report.llm_title
        payload["llm_summary"] = report.llm_summary
        payload["llm_model"] = report.llm_model
    return payload


def point_id(report: Report) -> str:
    """Content-addressed: the same report (and vector) is the same point, never rewritten."""
    body = json.dumps(report_payload(report), sort_keys=True, ensure_ascii=False)
    digest = hashlib.blake2b(np.round(report.vector, 5).tobytes(), digest_size=8).hexdigest()
    return str(uuid.uuid5(_NAMESPACE, f"{body}\n{digest}"))


def _report(point: StoredPoint) -> Report:
    p = theme_payload(point)
    vector = point.vector if point.vector is not None else np.zeros(0, dtype=np.float32)
    return Report(
        id=p["theme_id"],
        level=p["level"],
        title=p["title"],
        terms=p["terms"],
        entities=p["entities"],
        evidence=[Evidence(**e) for e in p["evidence"]],
        documents=p["documents"],
        parent=p["parent"],
        children=p["children"],
        vector=np.asarray(vector, dtype=np.float32),
        llm_title=p.get("llm_title"),
        llm_summary=p.get("llm_summary"),
        llm_model=p.get("llm_model"),
    )


def load_themes(store: VectorStore, corpus: str) -> ThemeSet | None:
    """The stored hierarchy, or None when the corpus has none (never built, or its points are not
    all there: the next index run writes it again)."""
    name = collection_name(corpus, THEMES)
    if not store.has_collection(name):
        return None
    found = store.retrieve(name, [MANIFEST_ID])
    if not found:
        return None
    manifest = theme_manifest_payload(found[0])
    points = store.retrieve(name, manifest["points"], with_vectors=True)
    if len(points) != len(manifest["points"]):
        return None
    reports = {r.id: r for r in map(_report, points)}
    return ThemeSet(
        reports=dict(sorted(reports.items())),
        doc_versions=dict(manifest["doc_versions"]),
        next_ids={int(k): v for k, v in manifest["next_ids"].items()},
        drift=manifest["drift"],
        noise=manifest["noise"],
        unmeasured=manifest.get("unmeasured", 0),
    )


@dataclass(frozen=True)
class WriteCounts:
    written: int
    removed: int


def write_themes(store: VectorStore, corpus: str, themes: ThemeSet, *, dim: int, batch: int) -> WriteCounts:
    """Store `themes` as the corpus's hierarchy (see the module's note on the order of writes)."""
    name = collection_name(corpus, THEMES)
    store.create_collection(name, dim)
    there = {p.id for p in store.scroll(name, with_vectors=False)}
    ids = themes.point_ids()
    new = [
        StoredPoint(id=ids[tid], payload=stored(report_payload(r)), vector=r.vector)
        for tid, r in themes.reports.items()
        if ids[tid] not in there
    ]
    for start in range(0, len(new), batch):
        store.upsert(name, new[start : start + batch])
    manifest = ThemeManifestPayload(
        manifest=True,
        points=sorted(ids.values()),
        doc_versions=themes.doc_versions,
        next_ids={str(k): v for k, v in sorted(themes.next_ids.items())},
        drift=themes.drift,
        noise=themes.noise,
        unmeasured=themes.unmeasured,
    )
    before = store.retrieve(name, [MANIFEST_ID]) if MANIFEST_ID in there else []
    if not before or before[0].payload != stored(manifest):
        store.upsert(name, [StoredPoint(id=MANIFEST_ID, payload=stored(manifest), vector=_manifest_vector(dim))])
    stale = sorted(there - set(ids.values()) - {MANIFEST_ID})
    for start in range(0, len(stale), batch):
        store.delete(name, stale[start : start + batch])
    return WriteCounts(written=len(new), removed=len(stale))


def _manifest_vector(dim: int) -> np.ndarray:
    """The manifest's vector: the store wants one; a unit vector no community search is after
    (searches filter by level, which the manifest lacks)."""
    vector = np.zeros(dim, dtype=np.float32)
    vector[0] = 1.0
    return vector


def drop_themes(store: VectorStore, corpus: str) -> None:
    name = collection_name(corpus, THEMES)
    if store.has_collection(name):
        store.drop_collection(name)


def theme_ids_at(store: VectorStore, corpus: str, vector: np.ndarray, levels: Sequence[int], limit: int) -> list[str]:
    """The ids of the communities at `levels` nearest a vector, by the store's own search."""
    hits = store.search(collection_name(corpus, THEMES), vector, limit, where=PointFilter(levels=tuple(levels)))
    return [str(h.payload["theme_id"]) for h in hits]
