"""Keeping a stored theme hierarchy live as documents come and go, with stable community ids.

An update starts from the stored hierarchy (`ThemeSet`) and the new snapshot:

* **incremental** (the default): deleted documents leave every community (a community left empty
  goes, and with it its id); each new document joins the leaf community of its nearest placed
  document (cosine of document vectors) and that leaf's ancestors; a changed document stays where
  it was. Only the reports of communities whose members, parent or children changed, or that hold
  a changed document, are written again: the others keep their stored point.
* **drift**: once the documents added, changed or deleted since drift was last measured reach
  `DRIFT_CHECK_SHARE` of the corpus, the new snapshot is clustered afresh and drift = 1 − the
  size-weighted mean, over the incremental leaves, of their best Jaccard overlap with a fresh leaf.
  When it passes the corpus's own noise (Leiden's drift between two seeds, measured at the last
  build) plus `REBUILD_MARGIN`, the fresh hierarchy is adopted instead, its communities taking the
  ids of the old ones they match. A smaller change carries the last measured drift and counts
  itself in `unmeasured`, so editing one file of a large corpus costs its reports and the TF-IDF
  statistics, not a clustering of the whole corpus.

Matching (fresh → old ids), level by level: pairs of a fresh and an old community ranked by the
Jaccard of their member documents (documents still in the corpus), taken greedily, best first, when
the Jaccard is at least `MATCH_JACCARD` and neither side is taken; a fresh community left unmatched
gets a new id (`L<level>.<n>`, numbers never reused: the manifest keeps the next one per level).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cuerag.communities.docgraph import document_edges, tfidf_vectors
from cuerag.communities.documents import DocTable
from cuerag.communities.hierarchy import SEED, Community, Hierarchy, hierarchical_leiden
from cuerag.communities.index import MAX_CLUSTER_SIZE
from cuerag.communities.reports import Report, ReportWriter
from cuerag.communities.stored import ThemeSet, doc_versions, stored_hierarchy
from cuerag.graph.snapshot import Graph

# Above half, two communities share more members than either has of its own: the same theme.
MATCH_JACCARD = 0.5
# Leiden does not partition a graph the same way twice once it changes a little: between a fresh
# build and one with another seed, or without the edges of 1 % of the documents, the drift is
# 0.17-0.20 on HotpotQA's 994 passages and 0.36-0.39 on 2Wiki's 6,119 (benchmarks/themes_cost.py,
# docs/global.md). The noise depends on the corpus, so each (re)build measures it (the drift
# between the fresh build and one with another seed, stored in the manifest), and a rebuild is
# worth its churn of ids only `REBUILD_MARGIN` above it.
REBUILD_MARGIN = 0.15
# A corpus is clustered afresh to measure drift once this share of its documents has been added,
# changed or deleted since the last measure. Placing a few documents by their nearest neighbour
# cannot move the hierarchy far from a fresh build: with 5 % of the documents placed, the leaves
# they join account for at most that share of the size-weighted Jaccard, well under
# `REBUILD_MARGIN`; and the clustering is what an update of a large corpus spends its time on
# (about 24 s of 2Wiki's 6,119 documents, docs/global.md).
DRIFT_CHECK_SHARE = 0.05


@dataclass(frozen=True)
class ThemeUpdate:
    themes: ThemeSet
    changed: list[str]  # community ids whose report was (re)written
    drift: float
    rebuilt: bool
    unmeasured: int = 0  # documents changed since `drift` was measured (0: measured by this update)


def _members(hierarchy: Hierarchy) -> dict[str, frozenset[int]]:
    return {cid: frozenset(c.members) for cid, c in hierarchy.communities.items()}


def drift(current: Hierarchy, fresh: Hierarchy) -> float:
    """1 − the size-weighted mean best Jaccard of `current`'s leaves against `fresh`'s."""
    fresh_leaf = fresh.leaf_of()
    fresh_sizes = {c.id: c.size for c in fresh.leaves()}
    total = score = 0.0
    for leaf in current.leaves():
        overlaps = Counter(fresh_leaf[m] for m in leaf.members if m in fresh_leaf)
        best = max(
            (n / (leaf.size + fresh_sizes[f] - n) for f, n in overlaps.items()),
            default=0.0,
        )
        total += leaf.size
        score += leaf.size * best
    return 1.0 - score / total if total else 0.0


def incremental(themes: ThemeSet, docs: DocTable, next_ids: dict[int, int]) -> Hierarchy:
    """The stored hierarchy with deleted documents removed and new ones placed by their nearest
    placed document; `next_ids` is advanced for any new singleton community."""
    hierarchy = stored_hierarchy(themes, docs)
    leaf_of = hierarchy.leaf_of()
    placed = sorted(leaf_of)
    new = [d for d in range(len(docs)) if d not in leaf_of]
    communities = hierarchy.communities
    if new and placed and docs.vectors.shape[1]:
        sims = docs.vectors[new] @ docs.vectors[placed].T
        for row, d in enumerate(new):
            cid: str | None = leaf_of[placed[int(np.argmax(sims[row]))]]
            while cid is not None:
                communities[cid].members.append(d)
                cid = communities[cid].parent
    else:
        for d in new:
            cid = f"L0.{next_ids.get(0, 0)}"
            next_ids[0] = next_ids.get(0, 0) + 1
            communities[cid] = Community(id=cid, level=0, members=[d])
    for c in communities.values():
        c.members = sorted(set(c.members))
    return Hierarchy(communities=dict(sorted(communities.items())))


def matched(fresh: Hierarchy, old: Hierarchy | None, next_ids: dict[int, int]) -> Hierarchy:
    """`fresh` with its communities renamed to the old ones they match (see the module's note)."""
    rename: dict[str, str] = {}
    old_members = _members(old) if old is not None else {}
    for level in range(fresh.depth):
        olds = [cid for cid in old_members if old is not None and old.communities[cid].level == level]
        at_doc = {m: cid for cid in olds for m in old_members[cid]}
        pairs = []
        for c in fresh.level(level):
            for oid, n in Counter(at_doc[m] for m in c.members if m in at_doc).items():
                pairs.append((n / len(set(c.members) | old_members[oid]), c.id, oid))
        taken: set[str] = set()
        for jaccard, fid, oid in sorted(pairs, key=lambda p: (-p[0], p[1], p[2])):
            if jaccard >= MATCH_JACCARD and fid not in rename and oid not in taken:
                rename[fid] = oid
                taken.add(oid)
    # Fresh ids not matched take new numbers, in the fresh order (by level, then smallest member).
    ordered = sorted(fresh.communities.values(), key=lambda c: (c.level, min(c.members)))
    for c in ordered:
        if c.id not in rename:
            rename[c.id] = f"L{c.level}.{next_ids.get(c.level, 0)}"
            next_ids[c.level] = next_ids.get(c.level, 0) + 1
    communities = {
        rename[c.id]: Community(
            id=rename[c.id],
            level=c.level,
            members=list(c.members),
            parent=None if c.parent is None else rename[c.parent],
            children=sorted(rename[k] for k in c.children),
        )
        for c in fresh.communities.values()
    }
    return Hierarchy(communities=dict(sorted(communities.items())))


def fresh_hierarchy(graph: Graph, docs: DocTable, writer: ReportWriter) -> tuple[Hierarchy, Callable[[], float]]:
    """A fresh build and a way to measure its noise (its drift from a build with another seed)."""
    edges = document_edges(graph, docs, writer.tfidf)
    hierarchy = hierarchical_leiden(len(docs), edges, max_cluster_size=MAX_CLUSTER_SIZE)

    def noise() -> float:
        reseeded = hierarchical_leiden(len(docs), edges, max_cluster_size=MAX_CLUSTER_SIZE, seed=SEED + 1)
        return round(drift(hierarchy, reseeded), 4)

    return hierarchy, noise


def report_writer(graph: Graph, docs: DocTable) -> ReportWriter:
    """The report writer over the corpus's TF-IDF statistics (what every update needs)."""
    tfidf, vocabulary = tfidf_vectors(docs.doc_texts(graph))
    return ReportWriter(graph, docs, tfidf, vocabulary)


def touched_documents(old: ThemeSet, versions: dict[str, str]) -> int:
    """How many documents were added, changed or deleted between `old` and `versions`."""
    gone = old.doc_versions.keys() - versions.keys()
    return len(gone) + sum(1 for d, v in versions.items() if old.doc_versions.get(d) != v)


def update_themes(graph: Graph, old: ThemeSet | None, *, rebuild_drift: float | None = None) -> ThemeUpdate:
    """The hierarchy for `graph`, updated from `old` (built afresh when None); rebuilt when the
    drift passes `rebuild_drift` (by default the old build's noise plus `REBUILD_MARGIN`)."""
    docs = DocTable.build(graph)
    versions = doc_versions(graph, docs)
    if old is not None and old.doc_versions == versions:
        return ThemeUpdate(themes=old, changed=[], drift=old.drift, rebuilt=False, unmeasured=old.unmeasured)
    if len(docs) == 0:
        # Every document deleted: no community is left (clustering nothing has no statistics).
        # The id counters stay, so a community made later never takes an id an old one had.
        emptied = ThemeSet(reports={}, doc_versions={}, next_ids=dict(old.next_ids) if old is not None else {})
        return ThemeUpdate(themes=emptied, changed=[], drift=0.0, rebuilt=False)
    writer = report_writer(graph, docs)
    next_ids = dict(old.next_ids) if old is not None else {}
    unmeasured = 0
    noise_of: Callable[[], float] | None = None
    if old is None:
        fresh, noise_of = fresh_hierarchy(graph, docs, writer)
        hierarchy, measured, rebuilt = matched(fresh, None, next_ids), 0.0, True
    else:
        hierarchy = incremental(old, docs, next_ids)
        unmeasured = old.unmeasured + touched_documents(old, versions)
        measured, rebuilt = old.drift, False
        if unmeasured >= DRIFT_CHECK_SHARE * len(docs) or rebuild_drift is not None:
            fresh, noise_of = fresh_hierarchy(graph, docs, writer)
            measured, unmeasured = round(drift(hierarchy, fresh), 4), 0
            threshold = old.noise + REBUILD_MARGIN if rebuild_drift is None else rebuild_drift
            rebuilt = measured > threshold
            if rebuilt:
                hierarchy = matched(fresh, stored_hierarchy(old, docs), next_ids)
    if rebuilt and noise_of is not None:
        noise = noise_of()
    else:
        assert old is not None  # a first build is always `rebuilt`
        noise = old.noise
    changed_docs = {d for d, v in versions.items() if old is not None and old.doc_versions.get(d) not in (None, v)}
    reports: dict[str, Report] = {}
    changed: list[str] = []
    for cid, community in hierarchy.communities.items():
        before = old.reports.get(cid) if old is not None else None
        documents = [docs.doc_ids[m] for m in community.members]
        if (
            before is not None
            and before.level == community.level
            and before.documents == documents
            and before.parent == community.parent
            and before.children == community.children
            and not changed_docs & set(documents)
        ):
            reports[cid] = before
        else:
            reports[cid] = writer.report(community)
            changed.append(cid)
    themes = ThemeSet(
        reports=reports, doc_versions=versions, next_ids=next_ids, drift=measured, noise=noise, unmeasured=unmeasured
    )
    return ThemeUpdate(themes=themes, changed=changed, drift=measured, rebuilt=rebuilt, unmeasured=unmeasured)
