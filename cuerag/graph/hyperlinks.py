"""Hyperlinks as graph edges: each link a chunk holds, resolved to the corpus document it points
at. Resolved when the graph is built from the stored chunks, so the edges always match what the
corpus holds now (a link to a document indexed later starts to count then)."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from cuerag.graph.schema import ChunkPayload


def _stem(doc_id: str) -> str:
    return posixpath.splitext(posixpath.basename(doc_id))[0].casefold()


def resolve_links(payloads: Sequence[ChunkPayload], docs: Sequence[str], titles: Sequence[str]) -> list[dict[int, str]]:
    """For each chunk, its links that lead to a corpus document: link position → document id.
    A path link matches the id it resolved to (or that id plus `.md`, as notes apps write
    links); a `[[wikilink]]` matches a document's file stem or title, case aside. Links from a
    document to itself are not edges."""
    ids = set(docs)
    by_name: dict[str, str] = {}
    for doc, title in zip(docs, titles, strict=True):
        by_name.setdefault(_stem(doc), doc)
        if title:
            by_name.setdefault(title.casefold().strip(), doc)
    out: list[dict[int, str]] = []
    for payload, own in zip(payloads, docs, strict=True):
        found: dict[int, str] = {}
        for n, link in enumerate(payload.get("links", [])):
            if link.get("wiki"):
                raw = str(link.get("target", "")).strip()
                target = by_name.get(raw.casefold()) or by_name.get(_stem(raw))
            else:
                path = link.get("doc_id")
                target = next((t for t in (path, f"{path}.md") if path and t in ids), None)
            if target is not None and target != own:
                found[n] = target
        out.append(found)
    return out
