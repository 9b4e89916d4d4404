"""Site chrome found across documents, whatever their format: a knowledge unit (a sentence, a line
of a menu) that a large share of a corpus's documents hold is the site's navigation or boilerplate
("Download the ebook", "Prev", "Up", "Home", a copyright line), not knowledge. In the graph such a
unit would be a hub joining every page to every other, so the walk would travel through it and
bring back pages that share only their menu (issue 30).

A unit is chrome when it is in at least `CHROME_MIN_DOCUMENTS` documents and in more than
`CHROME_SHARE` of them. The share keeps a phrase that many pages legitimately repeat (an option's
description in a third of a tool's man pages) and the minimum keeps small corpora whole: in three
notes, one sentence that all three hold is a fact they share, not a menu. The figures behind the
two numbers are in docs/formats.md.

The rule is applied where the graph is built from the stored points (`cuerag.graph.snapshot`), so
it always holds for the corpus as it is now: adding documents can make a unit chrome, deleting
them can make it knowledge again, with no flag to go stale. The chrome units stay stored (the
chunks still list them, and a later corpus may need them back); the graph leaves them, and the
entities only they mention, out of its nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

CHROME_SHARE = 0.5
CHROME_MIN_DOCUMENTS = 10


def chrome_units(unit_chunks: Sequence[Sequence[int]], chunk_docs: Sequence[str]) -> set[int]:
    """The positions of the units that are chrome, given each unit's chunks and each chunk's
    document."""
    documents = len(set(chunk_docs))
    floor = max(CHROME_MIN_DOCUMENTS, int(documents * CHROME_SHARE) + 1)  # "more than" the share
    found: set[int] = set()
    for u, chunks in enumerate(unit_chunks):
        if len(chunks) >= floor and len({chunk_docs[c] for c in chunks}) >= floor:
            found.add(u)
    return found
