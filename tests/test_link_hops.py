"""Link edges inside the walk: a hyperlink or a title mention in a unit's sentence lets Q-Iter's beam
hop to the units of the document it points at, where no entity leads, and the trace says which
hops were entity hops and which were link hops."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cuerag import CueRag, Settings, make_params
from cuerag.models import Models
from cuerag.results import RetrievalResult

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
    folder = tmp_path_factory.mktemp("runbooks")
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    engine = CueRag(Settings(data_dir=tmp_path_factory.mktemp("data")), models=models)
    engine.index_paths(CORPUS, [Path(folder)])
    yield engine
    engine.close()


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
    result = engine.retriever(CORPUS).q_iter(question, chosen, entities=[entity])
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
    from cuerag.explain import GraphTitles, explain

    result = walk(engine, "How are the stuck workers of Harbor brought back?", "Harbor")
    hit = next(h for h in explain(result, GraphTitles(engine.graph(CORPUS))).chunks if h.doc_id == "oncall.md")
    assert hit.why.kind == "path"
    assert "hyperlink to “Night shift procedures”" in hit.why.text
    assert [s.kind for s in hit.why.path][-1] == "hyperlink"
