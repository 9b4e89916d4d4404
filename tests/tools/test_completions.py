"""Completing a document id reads the listing from where the typed prefix would be, and stops once
the ids pass it: a prefix no id has costs one page, not a page per 200 documents of the corpus."""

from __future__ import annotations

from cuerag.graph.catalog import DocumentInfo, DocumentPage, page
from tools.resources import MAX_COMPLETIONS, complete_doc_id

CORPUS = "big"


class _Listing:
    """The part of an engine completion uses: a corpus's documents, paged as the engine pages
    them, each page counted."""

    def __init__(self, ids: list[str]) -> None:
        self._documents = [DocumentInfo(doc_id=i, title="", source=i, format="inline", chunks=1) for i in sorted(ids)]
        self.pages = 0

    def corpora(self) -> list[str]:
        return [CORPUS]

    def list_documents(self, corpus: str, *, cursor: str | None = None, limit: int = 50) -> DocumentPage:
        self.pages += 1
        return page(corpus, self._documents, filter_json="{}", cursor=cursor, limit=limit)


IDS = [f"notes/{n:05d}.md" for n in range(20_000)] + [
    "a.md",
    "teams/b.md",
    "teams/c.md",
    "zz/\U0010ffff.md",
    "\ue000.md",
]


def test_a_prefix_no_id_has_reads_one_page() -> None:
    """Before: every page of the corpus (100 here) was read to find nothing."""
    for prefix in ("nope", "notes/x", "notes/00000.md-", "\U0010ffff"):
        listing = _Listing(IDS)
        done = complete_doc_id(listing, CORPUS, prefix)  # type: ignore[arg-type]
        assert done.values == []
        assert listing.pages == 1, (prefix, listing.pages)


def test_completion_finds_the_ids_of_a_prefix_wherever_they_sort() -> None:
    for prefix, expected in [
        ("teams/", ["teams/b.md", "teams/c.md"]),
        ("notes/1999", [f"notes/1999{n}.md" for n in range(10)]),
        ("zz/", ["zz/\U0010ffff.md"]),
        ("a", ["a.md"]),
        ("\ue000", ["\ue000.md"]),  # the character below it is a surrogate, which no cursor can carry
        ("\x00", []),
    ]:
        listing = _Listing(IDS)
        done = complete_doc_id(listing, CORPUS, prefix)  # type: ignore[arg-type]
        assert done.values == expected and done.has_more is False
        assert listing.pages <= 2, (prefix, listing.pages)
    # Many matches: the first MAX_COMPLETIONS, and more said.
    listing = _Listing(IDS)
    done = complete_doc_id(listing, CORPUS, "notes/")  # type: ignore[arg-type]
    assert done.values == sorted(IDS)[1 : MAX_COMPLETIONS + 1] and done.has_more is True
    everything = complete_doc_id(_Listing(IDS[:50]), CORPUS, "")  # type: ignore[arg-type]
    assert everything.values == sorted(IDS[:50]) and everything.has_more is False
