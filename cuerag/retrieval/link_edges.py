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

from cuerag.graph.schema import LinkPayload
from cuerag.graph.snapshot import Graph
from cuerag.graph.title_mentions import MAX_TARGET_CHUNKS, TitleSpecificity
from cuerag.text.entities import fold_accents

LinkKind = Literal["hyperlink", "title"]

_WORD = re.compile(r"\w+")


def _folded(text: str) -> str:
    """Words only, case and accents folded, padded with spaces: so that an anchor text is found
    in a sentence as whole words, however either is spaced or punctuated."""
    return " " + " ".join(_WORD.findall(fold_accents(text).casefold())) + " "


def unit_spans(text: str, units: list[str]) -> list[list[tuple[int, int]]]:
    """Where each unit occurs in its chunk's text, every occurrence: a sentence unit is the text's
    words with the whitespace between them collapsed, so it is found word for word, on word
    boundaries. The text is collapsed once and searched with `str.find`, as a chunk holds many
    units. Empty for a unit not found (an LLM's rewording)."""
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    collapsed = " ".join(text[a:b] for a, b in words)
    # The collapsed text's word starts, and the word each one is.
    starts: dict[int, int] = {}
    at = 0
    for n, (a, b) in enumerate(words):
        starts[at] = n
        at += b - a + 1
    spans: list[list[tuple[int, int]]] = []
    for unit in units:
        needle = " ".join(unit.split())
        count = needle.count(" ") + 1
        found: list[tuple[int, int]] = []
        at = collapsed.find(needle) if needle else -1
        while at >= 0:
            first = starts.get(at)  # None: the match starts inside a word
            end = at + len(needle)
            if first is not None and (end == len(collapsed) or collapsed[end] == " "):
                found.append((words[first][0], words[first + count - 1][1]))
            at = collapsed.find(needle, at + 1)
        spans.append(found)
    return spans


def _place(link: LinkPayload) -> int | None:
    """A stored link's start in its chunk; None for a link stored before places were."""
    start = link.get("start")
    return start if isinstance(start, int) and not isinstance(start, bool) else None


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
    place lies in the unit's sentence, see `_link_units`); title mentions are read from a unit's text when the
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
            placed = any(_place(link) is not None for link in written)
            spans = unit_spans(graph.chunk_texts[c], [graph.unit_texts[u] for u in units]) if placed else []
            for n, doc in resolved.items():
                link: LinkPayload = written[n] if n < len(written) else {}
                for u in self._link_units(link, units, spans):
                    self._hyperlinks[u] = tuple(dict.fromkeys((*self._hyperlinks.get(u, ()), doc)))

    def _link_units(self, link: LinkPayload, units: list[int], spans: list[list[tuple[int, int]]]) -> list[int]:
        """The units a chunk's hyperlink belongs to: the sentence whose text holds the link's place in
        the chunk (the longest, where a short unit's words also occur inside a longer sentence).
        Without a place (an index made before places were stored) every unit holding its anchor text
        as words; with one that no sentence found holds, the units not found (an LLM's rewording)
        that hold them."""
        at = _place(link)
        candidates = units
        if at is not None and spans:
            holding = [
                (end - start, u)
                for u, found in zip(units, spans, strict=True)
                for start, end in found
                if start <= at < end
            ]
            if holding:
                return [max(holding)[1]]
            candidates = [u for u, found in zip(units, spans, strict=True) if not found]
        anchor = _folded(str(link.get("text", "")))
        if not anchor.strip():
            return []
        return [u for u in candidates if anchor in _folded(self._graph.unit_texts[u])]

    def hyperlinks(self, unit: int) -> tuple[str, ...]:
        """The documents the unit's sentence hyperlinks or wikilinks to, in the order written."""
        return self._hyperlinks.get(unit, ())

    def document_chunks(self, doc: str) -> tuple[int, ...]:
        """The document's chunks, in reading order (none for a document not in the snapshot)."""
        return self._doc_chunks.get(doc, ())

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
