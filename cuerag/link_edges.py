"""Link edges: what Q-Iter's walk may hop along besides entities. A unit points at a document by
an explicit hyperlink in its sentence, or by naming the document's title; the question itself
points at the documents whose titles it names. Each edge leads to the units of the target's
chunks, which the walk ranks like an entity's adjacent units.

Derived from the snapshot (the stored hyperlinks and the chunk titles), so an index needs nothing
new. A title mention weighs as much as the title is specific in the corpus (`TitleSpecificity`);
a hyperlink, written by an author on purpose, weighs 1.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from cuerag.entities import fold_accents
from cuerag.graph import Graph
from cuerag.links import MAX_TARGET_CHUNKS, TitleSpecificity

LinkKind = Literal["hyperlink", "title"]

_WORD = re.compile(r"\w+")


def _folded(text: str) -> str:
    """Words only, case and accents folded, padded with spaces: so that an anchor text is found
    in a sentence as whole words, however either is spaced or punctuated."""
    return " " + " ".join(_WORD.findall(fold_accents(text).casefold())) + " "


def unit_spans(text: str, units: list[str]) -> list[tuple[int, int] | None]:
    """Where each unit lies in its chunk's text, in order: a sentence unit is the text's words
    with the whitespace between them collapsed, so it is found word for word, past the unit
    before it. None for a unit not found (an LLM's rewording)."""
    spans: list[tuple[int, int] | None] = []
    at = 0
    for unit in units:
        words = unit.split()
        found = re.compile(r"\s+".join(map(re.escape, words))).search(text, at) if words else None
        spans.append(None if found is None else found.span())
        if found is not None:
            at = found.end()
    return spans


@dataclass(frozen=True)
class LinkTarget:
    """Where one link edge leads: a document's chunks, with the title the trace names it by and
    the weight its units' similarities are multiplied by when the walk chooses among them."""

    kind: LinkKind
    title: str
    chunks: tuple[int, ...]
    weight: float


class LinkEdges:
    """A snapshot's link edges. The hyperlinks of each unit are found once (a chunk's links whose
    anchor text the unit's sentence holds); title mentions are read from a unit's text when the
    walk reaches it, since a corpus's units are many and a query's walk reaches few."""

    def __init__(self, graph: Graph, specificity: Callable[[], TitleSpecificity]) -> None:
        self._graph = graph
        self._specificity = specificity
        self._doc_chunks = {doc: tuple(chunks) for doc, chunks in graph.doc_chunks().items()}
        self._hyperlinks: dict[int, tuple[str, ...]] = {}
        for c, resolved in enumerate(graph.chunk_links):
            if not resolved:
                continue
            written = graph.chunk_payload(c).get("links", [])
            units = graph.chunk_units[c]
            placed = any(isinstance(link.get("start"), int) for link in written)
            spans = unit_spans(graph.chunk_texts[c], [graph.unit_texts[u] for u in units]) if placed else []
            for n, doc in resolved.items():
                link = written[n] if n < len(written) else {}
                for u in self._link_units(link, units, spans):
                    self._hyperlinks[u] = tuple(dict.fromkeys((*self._hyperlinks.get(u, ()), doc)))

    def _link_units(self, link: dict[str, object], units: list[int], spans: list[tuple[int, int] | None]) -> list[int]:
        """The units a chunk's hyperlink belongs to: the one whose sentence holds the link's place
        in the chunk; else (an index made before places were stored, or units an LLM rewrote, which
        are not found in the chunk's text) every unit that holds its anchor text as words."""
        at = link.get("start")
        if isinstance(at, int) and spans:
            for u, span in zip(units, spans, strict=True):
                if span is not None and span[0] <= at < span[1]:
                    return [u]
        anchor = _folded(str(link.get("text", "")))
        if not anchor.strip():
            return []
        return [u for u in units if anchor in _folded(self._graph.unit_texts[u])]

    def from_unit(self, unit: int, *, weigh_titles: bool = True) -> list[LinkTarget]:
        """The documents a unit links to or names by title (its own document's title aside)."""
        g = self._graph
        own = g.unit_chunks[unit][0] if g.unit_chunks[unit] else None
        targets = [self._document(doc) for doc in self._hyperlinks.get(unit, ())]
        # The unit names the title itself, so one of the documents naming it is the reason it is
        # asked (as for a title link followed from a passage).
        return self._merged(targets, g.unit_texts[unit], own, besides=1, weigh=weigh_titles)

    def from_query(self, query: str, *, weigh_titles: bool = True) -> list[LinkTarget]:
        """The documents whose titles the question names."""
        return self._merged([], query, None, besides=0, weigh=weigh_titles)

    def _document(self, doc: str) -> LinkTarget:
        chunks = self._doc_chunks.get(doc, ())[:MAX_TARGET_CHUNKS]  # as a title mention is capped
        title = self._graph.chunk_titles[chunks[0]] if chunks else ""
        return LinkTarget(kind="hyperlink", title=title or doc, chunks=chunks, weight=1.0)

    def _merged(
        self, targets: list[LinkTarget], text: str, own: int | None, *, besides: int, weigh: bool
    ) -> list[LinkTarget]:
        """The hyperlink targets, then the titles the text names that no hyperlink already leads to."""
        g = self._graph
        reached = {c for t in targets for c in t.chunks}
        for named in g.title_index.named_in(text, exclude_titles_of=own):
            if reached.issuperset(named.chunks):
                continue
            weight = self._specificity().of(named.title, besides=besides) if weigh else 1.0
            title = g.chunk_titles[named.chunks[0]]
            targets.append(LinkTarget(kind="title", title=title, chunks=tuple(named.chunks), weight=weight))
            reached.update(named.chunks)
        return [t for t in targets if t.chunks]
