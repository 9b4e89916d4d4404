"""A link from a best passage is evidence (issue 30): the document a best candidate hyperlinks or
wikilinks to joins the final rerank (`linked_documents`), and a short note's other sections join
when one of them is among the best (`note_chunks`). Two small vaults reproduce the issue's cases:
two notes about backups wikilink to the server note that answers the question, which says nothing
of backups itself; an incident note whose root cause sits in a section the walk does not reach."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import notes_engine

from cuerag import CueRag, make_params
from cuerag.models.loading import Models
from cuerag.retrieval.explain import GraphTitles, explain
from cuerag.retrieval.qiter import q_iter
from cuerag.retrieval.results import RetrievalResult

CORPUS = "vault"
NOTES = {
    "backups.md": "# Backups\n\nThe nightly backups of the file share are written to "
    "[[kestrel|the storage box]] at one in the morning.\n\nEach backup is kept for thirty days.\n",
    "restore.md": "# Restore\n\nTo restore a file from the nightly backups, log in to "
    "[[kestrel|the storage box]] and copy it from the snapshot folder.\n",
    # The answer: it never says "backup", and the question names no server; the links read "the
    # storage box", so no entity the walk could hop along names it either.
    "kestrel.md": "# kestrel\n\nkestrel sits in rack four of the basement room. It runs Debian 12 bookworm "
    "with ZFS on four disks.\n",
    "heron.md": "# heron\n\nheron is the mail server. It runs Debian 11 bullseye.\n",
    "printer.md": "# Printer\n\nThe office printer needs a new toner cartridge every month.\n",
    # An incident note of three sections, the second of which answers.
    "inc-0007.md": "# INC-0007\n\n## What happened\n\nOn 3 March the INC-0007 outage took the billing site down "
    "for forty minutes while customers saw errors at checkout.\n\n## Root cause\n\nA certificate on the "
    "load balancer expired because its renewal job had been disabled.\n\n## Follow-up\n\nThe renewal job "
    "now alerts the on-call engineer when it fails.\n",
    "inc-0003.md": "# INC-0003\n\n## What happened\n\nThe INC-0003 outage stopped the mail queue for an hour.\n",
    "billing.md": "# Billing site\n\nThe billing site takes card payments for every customer order.\n",
}
VAULT_QUESTION = "Which Debian release runs on the server that stores our nightly backups?"
INCIDENT_QUESTION = "What was the root cause of the INC-0007 outage?"


@pytest.fixture(scope="module")
def vault(models: Models, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CueRag]:
    yield from notes_engine(models, tmp_path_factory, CORPUS, NOTES)


# Nothing but the walk and the final rerank's links can bring a chunk in: no lexical candidates,
# no titles the question names, no dense fill, no entity links, no hops along links in the walk.
WALK_ONLY = {
    "k": 1,
    "depth": 1,
    "lexical_weight": 0.0,
    "query_titles": False,
    "fill_with_dense": False,
    "entity_links": 0,
    "link_hops": False,
    "title_links": 2,
}


def walked(engine: CueRag, corpus: str, question: str, **params: object) -> RetrievalResult:
    result = q_iter(engine.retriever(corpus), question, make_params(**{**WALK_ONLY, **params}))
    assert result.trace is not None
    return result


def test_the_vault_links_its_notes(vault: CueRag) -> None:
    g = vault.graph(CORPUS)
    linked = {g.chunk_docs[c]: set(links.values()) for c, links in enumerate(g.chunk_links) if links}
    assert linked == {"backups.md": {"kestrel.md"}, "restore.md": {"kestrel.md"}}


def test_the_note_a_best_passage_links_to_joins_the_ranking(vault: CueRag) -> None:
    unlinked = walked(vault, CORPUS, VAULT_QUESTION, top_n=3)
    assert "kestrel.md" not in {h.doc_id for h in unlinked.chunks}
    linked = walked(vault, CORPUS, VAULT_QUESTION, top_n=3, linked_documents=True)
    by_doc = {h.doc_id: h for h in linked.chunks}
    server = by_doc["kestrel.md"]
    assert server.linked_kind == "hyperlink" and server.unit_ids == []
    heads = {h.chunk_id: h.doc_id for h in linked.chunks}
    assert heads.get(server.linked_from or "") in ("backups.md", "restore.md")
    steps = [s for s in linked.trace.title_steps if s.kind == "hyperlink"]  # type: ignore[union-attr]
    assert [s.chunk_id for s in steps] == [server.chunk_id] and steps[0].specificity == 1.0
    why = {h.doc_id: h.why for h in explain(linked, GraphTitles(vault.graph(CORPUS))).chunks}
    assert why["kestrel.md"].kind == "hyperlink"
    assert why["kestrel.md"].text.startswith("hyperlink: ") and "links to “kestrel”" in why["kestrel.md"].text


def test_links_are_followed_from_the_title_link_heads_only(vault: CueRag) -> None:
    assert "kestrel.md" not in {
        h.doc_id for h in walked(vault, CORPUS, VAULT_QUESTION, top_n=3, linked_documents=True, title_links=0).chunks
    }


def test_the_answering_section_of_a_short_note_joins_its_best_section(vault: CueRag) -> None:
    def sections(result: RetrievalResult) -> list[str]:
        return [h.citation.section[-1] if h.citation and h.citation.section else h.title for h in result.chunks]

    alone = walked(vault, CORPUS, INCIDENT_QUESTION, top_n=3)
    assert "Root cause" not in sections(alone)
    joined = walked(vault, CORPUS, INCIDENT_QUESTION, top_n=3, note_chunks=4)
    assert "Root cause" in sections(joined)
    root = joined.chunks[sections(joined).index("Root cause")]
    assert root.linked_kind == "note_section" and root.doc_id == "inc-0007.md"
    # A note of more chunks than the cap is not a short note: its sections stay out.
    assert "Root cause" not in sections(walked(vault, CORPUS, INCIDENT_QUESTION, top_n=3, note_chunks=2))
