"""A deterministic hierarchy of communities over a weighted graph.

Clustering is graspologic-native's hierarchical Leiden (MIT, Rust; the same call Microsoft
GraphRAG makes): Leiden on the whole graph gives level 0; every community larger than
`max_cluster_size` is clustered again on its own sub-graph, giving level 1 under it, and so on.
A fixed seed and a pinned library version make the same graph give the same hierarchy (the
version matters: 1.3 changed Leiden's output against 1.2). Nodes with no edge become singleton
communities at level 0, so every node has a home.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

SEED = 0xC0E2A6


@dataclass
class Community:
    """One community: its member nodes (all levels below it included), parent and children."""

    id: str
    level: int
    members: list[int]
    parent: str | None = None
    children: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.members)


@dataclass(frozen=True)
class Hierarchy:
    communities: dict[str, Community]

    def level(self, level: int) -> list[Community]:
        return [c for c in self.communities.values() if c.level == level]

    @property
    def depth(self) -> int:
        return 1 + max((c.level for c in self.communities.values()), default=-1)

    def roots(self) -> list[Community]:
        return [c for c in self.communities.values() if c.parent is None]

    def leaves(self) -> list[Community]:
        """The finest partition: communities without children (every node is in exactly one)."""
        return [c for c in self.communities.values() if not c.children]

    def path(self, community: str) -> list[str]:
        """The ids from the root down to `community`."""
        out = [community]
        while (parent := self.communities[out[-1]].parent) is not None:
            out.append(parent)
        return out[::-1]

    def leaf_of(self) -> dict[int, str]:
        return {m: c.id for c in self.leaves() for m in c.members}


def hierarchical_leiden(
    n_nodes: int, edges: Sequence[tuple[int, int, float]], *, max_cluster_size: int = 12, seed: int = SEED
) -> Hierarchy:
    """Cluster nodes 0..n_nodes-1 connected by weighted undirected edges into a hierarchy."""
    import graspologic_native as gn

    named = [(f"{a}", f"{b}", float(w)) for a, b, w in edges if a != b and w > 0]
    rows = (
        gn.hierarchical_leiden(
            edges=named,
            starting_communities=None,
            resolution=1.0,
            randomness=0.001,
            iterations=1,
            use_modularity=True,
            max_cluster_size=max_cluster_size,
            seed=seed,
        )
        if named
        else []
    )
    raw: dict[tuple[int, int], list[int]] = {}
    parents: dict[tuple[int, int], int | None] = {}
    for row in rows:
        key = (int(row.level), int(row.cluster))
        raw.setdefault(key, []).append(int(row.node))
        parents[key] = None if row.parent_cluster is None else int(row.parent_cluster)
    # Renumber by (level, smallest member) so ids do not depend on the library's cluster numbering.
    order = sorted(raw, key=lambda k: (k[0], min(raw[k])))
    ids: dict[tuple[int, int], str] = {}
    counters: dict[int, int] = {}
    for key in order:
        level = key[0]
        ids[key] = f"L{level}.{counters.get(level, 0)}"
        counters[level] = counters.get(level, 0) + 1
    communities: dict[str, Community] = {}
    for key in order:
        communities[ids[key]] = Community(id=ids[key], level=key[0], members=sorted(raw[key]))
    for key in order:
        parent = parents[key]
        if key[0] > 0 and parent is not None and (key[0] - 1, parent) in ids:
            pid = ids[(key[0] - 1, parent)]
            communities[ids[key]].parent = pid
            communities[pid].children.append(ids[key])
    placed = {m for c in communities.values() if c.level == 0 for m in c.members}
    for node in range(n_nodes):
        if node not in placed:
            cid = f"L0.{counters.get(0, 0)}"
            counters[0] = counters.get(0, 0) + 1
            communities[cid] = Community(id=cid, level=0, members=[node])
    return Hierarchy(communities=communities)
