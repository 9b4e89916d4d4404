"""What a theme's report and global search show a reader: statements that say something (not a
documentation page's admonition label, "Danger", or a fragment left by stripped markup, "Use ."),
and top entities that are names (not formula or markup pieces). Found on Debian's docutils-doc HTML."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

import pytest
from conftest import notes_engine

from cuerag.communities.documents import DocTable
from cuerag.communities.live import report_writer
from cuerag.communities.reports import says_something
from cuerag.engine.facade import CueRag
from cuerag.models.loading import Models

CORPUS = "fragments"

# Each page: one sentence that says something and, on lines of their own (a unit each), the
# fragments an HTML page leaves: admonition labels and sentences whose inline markup was dropped.
NOTES = {
    "hive.md": "# The beehive\n\nA honey bee colony lives in a hive of wax combs built by worker bees.\n\n"
    "Danger\n\nUse .\n\nSee :",
    "honey.md": "# Harvesting honey\n\nBeekeepers harvest honey by spinning capped combs in an extractor.\n\n"
    "Warning\n\nNote\n\nUse .",
    "bread.md": "# Baking bread\n\nBread dough rises when yeast ferments the sugars of the flour.\n\nTip\n\nSee .",
    "pasta.md": "# Fresh pasta\n\nFresh pasta is made from flour and eggs, rolled thin and cut into ribbons.\n\n"
    "Caution\n\nUse :",
}


@pytest.fixture(scope="module")
def engine(models: Models, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CueRag]:
    yield from notes_engine(models, tmp_path_factory, CORPUS, NOTES)


def test_fragments_are_not_statements() -> None:
    for text in ("Danger", "Use .", "See :", "x = 1 + 2", "Note:", "e.g."):
        assert not says_something(text), text
    for text in ("Use the smoker.", "A bee stings once.", "Run it twice"):
        assert says_something(text), text


def test_reports_quote_no_fragments(engine: CueRag) -> None:
    graph = engine.graph(CORPUS)
    assert {"Danger", "Use ."} <= set(graph.unit_texts)  # the fragments are units: the check below means something
    index = engine.communities(CORPUS)
    quoted = [e.text for r in index.reports.values() for e in r.evidence]
    assert quoted and all(says_something(t) for t in quoted), quoted


def test_global_search_states_no_fragments(engine: CueRag) -> None:
    for question in ("How are honey and bread made?", ""):  # a search, and the overview
        result = engine.global_search(CORPUS, question, budget_tokens=2000)
        stated = [s.text for g in result.groups for s in g.statements]
        assert stated and all(says_something(t) for t in stated), (question, stated)


def test_theme_entities_leave_out_formula_and_markup_pieces(engine: CueRag) -> None:
    graph = engine.graph(CORPUS)
    assert graph.entity_names
    # Every other entity renamed to what math and markup leave in a page's text.
    pieces = ["(1)", "x^2", "2.5", "{}", "1979", "a_1"]
    names = [pieces[i // 2 % len(pieces)] if i % 2 == 0 else n for i, n in enumerate(graph.entity_names)]
    docs = DocTable.build(graph)
    writer = report_writer(replace(graph, entity_names=names), docs)
    shown = writer.entities(list(range(len(docs))), k=len(names))
    assert shown and all(re.search(r"[^\W\d_]{2}", n) for n in shown), shown
