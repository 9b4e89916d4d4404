"""Link edges inside the walk: a hyperlink or a title mention in a unit's sentence lets Q-Iter's beam
hop to the units of the document it points at, where no entity leads, and the trace says which
hops were entity hops and which were link hops."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import notes_engine

from cuerag import CueRag, make_params
from cuerag.models.loading import Models
from cuerag.retrieval.qiter import q_iter
from cuerag.retrieval.results import RetrievalResult

CORPUS = "runbooks"
NOTES = {
    # The service's note points at the runbook by a hyperlink whose words are not the runbook's title.
    "harbor.md": "# Harbor\n\nHarbor is the shipping service of the company.\n\n"
    "Its night runbook is kept in [the on-call guide](oncall.md).\n",
    # This one names the runbook's title in lower case, with no hyperlink: NER sees no entity there.
    "ferry.md": "# Ferry\n\nFerry is the billing service of the company.\n\n"
    "Its outages are handled as the night shift procedures describe.\n",
    "oncall.md": "# Night shift procedures\n\nRestart the queue workers with the blue lever after midnight.\n",
    "lighthouse.md": "# Lighthouse\n\nLighthouse is the monitoring dashboard of the company.\n",
}
RUNBOOK = "Restart the queue workers with the blue lever after midnight."


@pytest.fixture(scope="module")
def engine(models: Models, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CueRag]:
    yield from notes_engine(models, tmp_path_factory, CORPUS, NOTES)


def walk(engine: CueRag, question: str, entity: str, **params: object) -> RetrievalResult:
    """Q-Iter from one query entity alone, with nothing after the walk that could bring a chunk in
    (no knowledge anchoring, no lexical or title candidates, no dense fill): what comes back, the
    walk reached."""
    chosen = make_params(
        knowledge_anchoring=False,
        lexical_weight=0.0,
        query_titles=False,
        title_links=0,
        fill_with_dense=False,
        **params,
    )
    result = q_iter(engine.retriever(CORPUS), question, chosen, entities=[entity])
    assert result.trace is not None
    return result


def reaching(result: RetrievalResult, text: str) -> list[tuple[list[str], list[str]]]:
    """The kept paths that reached the unit with this text: what each step came through, and how."""
    assert result.trace is not None
    return [(p.via_entities, p.via_kinds) for d in result.trace.depths for p in d.paths if text in p.unit_texts]


def test_a_hyperlink_lets_the_walk_reach_a_passage_no_entity_reaches(engine: CueRag) -> None:
    question = "How are the stuck workers of Harbor brought back?"
    linked = walk(engine, question, "Harbor")
    assert "oncall.md" in [h.doc_id for h in linked.chunks]
    paths = reaching(linked, RUNBOOK)
    # The trace says how: an entity hop into Harbor's note, then the hyperlink to the runbook. (The
    # query's "Harbor" also links to the other services' entities, whose notes may name the runbook.)
    assert (["Harbor", "Night shift procedures"], ["entity", "hyperlink"]) in [(v[-2:], k[-2:]) for v, k in paths]
    assert all(kinds[-1] in ("hyperlink", "title") for _, kinds in paths)  # no entity hop reaches it
    unlinked = walk(engine, question, "Harbor", link_hops=False)
    assert "oncall.md" not in [h.doc_id for h in unlinked.chunks]
    assert not reaching(unlinked, RUNBOOK)
    assert unlinked.trace is not None
    assert all(k == "entity" for d in unlinked.trace.depths for p in d.paths for k in p.via_kinds)


def test_a_title_named_in_a_sentence_is_an_edge_whatever_its_case(engine: CueRag) -> None:
    question = "How are the outages of Ferry handled at night?"
    linked = walk(engine, question, "Ferry")
    assert "oncall.md" in [h.doc_id for h in linked.chunks]
    paths = reaching(linked, RUNBOOK)
    assert (["Ferry", "Night shift procedures"], ["entity", "title"]) in [(v[-2:], k[-2:]) for v, k in paths]
    assert not reaching(walk(engine, question, "Ferry", link_hops=False), RUNBOOK)


def test_the_explanation_names_the_link_hop(engine: CueRag) -> None:
    from cuerag.retrieval.explain import GraphTitles, explain

    result = walk(engine, "How are the stuck workers of Harbor brought back?", "Harbor")
    hit = next(h for h in explain(result, GraphTitles(engine.graph(CORPUS))).chunks if h.doc_id == "oncall.md")
    assert hit.why.kind == "path"
    assert "hyperlink to “Night shift procedures”" in hit.why.text
    assert [s.kind for s in hit.why.path][-1] == "hyperlink"


# ---- found by an outside review ----------------------------------------------------------------


def _link_graph(
    unit_texts: list[str],
    chunk_units: list[list[int]],
    links: list[list[dict[str, object]]],
    docs: list[str],
    chunk_texts: list[str] | None = None,
):
    resolved = [{n: link["doc_id"] for n, link in enumerate(ls)} for ls in links]
    return SimpleNamespace(
        chunk_links=resolved,
        chunk_units=chunk_units,
        chunk_texts=chunk_texts or [" ".join(unit_texts[u] for u in us) for us in chunk_units],
        unit_texts=unit_texts,
        unit_chunks=[[c for c, us in enumerate(chunk_units) if u in us] for u in range(len(unit_texts))],
        chunk_titles=docs,
        title_index=SimpleNamespace(named_in=lambda text, exclude_titles_of=None: []),
        chunk_payload=lambda c: {"links": links[c]},
        doc_chunks=lambda: {d: [c] for c, d in enumerate(docs)},
    )


def test_a_hyperlink_is_an_edge_of_its_own_sentence_only() -> None:
    """A chunk's hyperlink belongs to the sentence it is in (its place, stored relative to the
    chunk). Matched by anchor words alone, "[here](b.md)" made every sentence of the chunk that
    says "here" hop to b, at weight 1 (a hyperlink outweighs any title mention)."""
    from cuerag.retrieval.link_edges import LinkEdges

    units = ["The manual is here.", "We are here to stay and the weather is fine."]
    text = "The manual is\nhere.  We are here to stay and the weather is fine."
    link = {"text": "here", "doc_id": "b", "start": text.index("here")}
    g = _link_graph(units, [[0, 1], []], [[link], []], ["a", "b"], [text, "B."])
    edges = LinkEdges(g, lambda: None)  # type: ignore[arg-type]
    assert [t.title for t in edges.from_unit(0)] == ["b"]
    assert edges.from_unit(1) == [], "a sentence with no link hops along the other sentence's link"
    # The same link in the second sentence belongs to it alone.
    link["start"] = text.index("here", text.index("We"))
    edges = LinkEdges(g, lambda: None)  # type: ignore[arg-type]
    assert edges.from_unit(0) == [] and [t.title for t in edges.from_unit(1)] == ["b"]


def hyperlinks_by_sentence(engine: CueRag, corpus: str, doc: str) -> dict[str, list[str]]:
    """Each unit of a document, by its text, with the titles its hyperlink edges lead to."""
    retriever = engine.retriever(corpus)
    g = retriever.graph
    edges = retriever.derived.link_edges()
    return {
        g.unit_texts[u]: [t.title for t in edges.from_unit(u, weigh_titles=False) if t.kind == "hyperlink"]
        for c, d in enumerate(g.chunk_docs)
        if d == doc
        for u in g.chunk_units[c]
    }


def test_an_indexed_hyperlink_keeps_its_place_and_leads_from_its_own_sentence(engine: CueRag, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "guide.md").write_text(
        "# Guide\n\nWe are here to help the crew.\n\nThe full manual is [here](manual.md). Here the weather is fine.\n",
        encoding="utf-8",
    )
    (folder / "manual.md").write_text("# Manual\n\nPull the blue lever twice.\n", encoding="utf-8")
    engine.index_paths("places", [folder])
    linked = hyperlinks_by_sentence(engine, "places", "guide.md")
    assert linked == {
        "We are here to help the crew.": [],
        "The full manual is here.": ["Manual"],
        "Here the weather is fine.": [],
    }, linked
    # The link moves to another sentence and the text stays the same (so does every chunk id):
    # the kept chunk's links are brought up to date, and the hop moves with the link.
    (folder / "guide.md").write_text(
        "# Guide\n\nWe are [here](manual.md) to help the crew.\n\nThe full manual is here. Here the weather is fine.\n",
        encoding="utf-8",
    )
    engine.index_paths("places", [folder], sync=True)
    moved = hyperlinks_by_sentence(engine, "places", "guide.md")
    assert moved == {
        "We are here to help the crew.": ["Manual"],
        "The full manual is here.": [],
        "Here the weather is fine.": [],
    }, moved


def test_a_hyperlink_without_a_place_falls_back_to_its_anchor_words() -> None:
    """An index made before links kept their place, or units an LLM reworded (not found in the
    chunk's text): the link goes to the sentences that hold its anchor text, as it did before."""
    from cuerag.retrieval.link_edges import LinkEdges, unit_spans

    units = ["The manual is here.", "Night shift procedures explain it."]
    g = _link_graph(units, [[0, 1], []], [[{"text": "manual", "doc_id": "b"}], []], ["a", "b"])
    assert [t.title for t in LinkEdges(g, lambda: None).from_unit(0)] == ["b"]  # type: ignore[arg-type]
    assert unit_spans("A b.\nC  d.", ["A b.", "Reworded.", "C d."]) == [[(0, 4)], [], [(5, 10)]]
    assert unit_spans("Go there. Go here.", ["here."]) == [[(13, 18)]]  # whole words only


def test_a_hyperlink_in_a_repeated_sentence_stays_with_that_sentence() -> None:
    """Units are one per distinct sentence, so the second "Read the manual here." is the first's
    unit: every occurrence is placed, and the link does not fall back to its anchor word."""
    from cuerag.retrieval.link_edges import LinkEdges

    units = ["Read the manual here.", "We are here to help."]
    text = "Read the manual here. We are here to help. Read the manual here."
    link = {"text": "here", "doc_id": "b", "start": text.rindex("here")}
    edges = LinkEdges(_link_graph(units, [[0, 1], []], [[link], []], ["a", "b"], [text, "B."]), lambda: None)  # type: ignore[arg-type]
    assert [t.title for t in edges.from_unit(0)] == ["b"] and edges.from_unit(1) == []


def test_a_link_hop_weight_below_one_does_not_raise_a_units_score() -> None:
    """Retriever.top_units multiplies each unit's similarity by its link's weight (a title's
    specificity, in (0, 1]). A similarity can be negative (the path's vector has lost the units
    already chosen, `query_update`), and then a smaller weight raises the score: a unit with a lower
    similarity AND a less specific title outranks one better on both counts."""
    from cuerag.retrieval.retriever import Retriever

    unit_vectors = np.array([[-0.5, np.sqrt(0.75)], [-0.6, np.sqrt(0.64)]], dtype=np.float32)
    r = Retriever.__new__(Retriever)
    r.graph = SimpleNamespace(unit_vectors=unit_vectors)  # type: ignore[assignment]
    r.subset = None  # type: ignore[assignment]
    vector = np.array([1.0, 0.0], dtype=np.float32)
    # unit 0: similarity -0.5, specific title (weight 1); unit 1: similarity -0.6, common title (0.1)
    ranked = r.top_units([0, 1], vector, 1, weights=[1.0, 0.1])
    assert ranked[0][0] == 0, ranked


def test_a_hyperlink_to_a_long_document_is_capped_as_a_title_mention_is() -> None:
    """A title mention leads to at most `per_title` (64) of the document's chunks (TitleIndex.named_in:
    "a long document's many chunks share its title"); a hyperlink to the same document leads to all
    of them, and `_link_hops` then ranks every unit of the document for every kept path at every
    depth (measured: a 5,000-chunk document of 200,000 units costs 0.33 s and a 320 MB transient
    copy of unit vectors per hop). A hostile document only has to link to a long one."""
    from cuerag.retrieval.link_edges import LinkEdges

    docs = ["a"] + ["book"] * 1000
    g = _link_graph(
        ["See the book."] + [f"Page {n}." for n in range(1000)],
        [[0]] + [[n + 1] for n in range(1000)],
        [[{"text": "the book", "doc_id": "book"}]] + [[] for _ in range(1000)],
        docs,
    )
    g.doc_chunks = lambda: {"a": [0], "book": list(range(1, 1001))}
    (target,) = LinkEdges(g, lambda: None).from_unit(0)  # type: ignore[arg-type]
    assert len(target.chunks) <= 64, len(target.chunks)
