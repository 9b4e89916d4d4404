"""The community hierarchy's mechanisms (issue 32), on small corpora built here: determinism, a
planted theme recovered as one community whose report cites it, global search reaching more
distinct documents than dense top-k for a broad question, and the three methods answering through
the engine like the baselines."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import notes_engine

from cuerag.communities import global_ranking
from cuerag.communities.docgraph import document_edges, tfidf_vectors
from cuerag.communities.documents import DocTable
from cuerag.communities.hierarchy import hierarchical_leiden
from cuerag.engine.facade import CueRag
from cuerag.models.loading import Models

CORPUS = "themes"

# An unrelated background corpus (three subjects) plus a planted theme: four notes on beekeeping.
BACKGROUND = {
    "orbit.md": "# Planetary orbits\nKepler's laws describe how planets orbit the Sun on ellipses. "
    "The orbital period grows with the semi-major axis of the ellipse.",
    "telescope.md": "# Telescopes\nA reflecting telescope gathers starlight with a curved mirror. "
    "Astronomers use large apertures to see faint galaxies and nebulae.",
    "eclipse.md": "# Solar eclipses\nDuring a solar eclipse the Moon passes between the Sun and the Earth "
    "and its shadow falls on the planet's surface.",
    "bread.md": "# Baking bread\nBread dough rises when yeast ferments the flour's sugars. Knead the dough, "
    "let it prove, then bake it in a hot oven.",
    "pasta.md": "# Fresh pasta\nFresh pasta is made from flour and eggs, rolled thin and cut into ribbons, "
    "then boiled in salted water for two minutes.",
    "soup.md": "# Vegetable soup\nA vegetable soup simmers onions, carrots and celery in stock; season it "
    "with salt and herbs before serving.",
    "offside.md": "# The offside rule\nIn football a player is offside when nearer the opponents' goal line "
    "than both the ball and the second-last defender.",
    "penalty.md": "# Penalty kicks\nA penalty kick is awarded for a foul inside the penalty area; the "
    "goalkeeper must stay on the goal line until the ball is kicked.",
    "league.md": "# Football leagues\nClubs in a football league play each other home and away; three "
    "points are awarded for a win and one for a draw.",
}
PLANTED = {
    "hive.md": "# The beehive\nA honey bee colony lives in a hive of wax combs built by worker bees; the "
    "queen bee lays eggs in the comb cells.",
    "honey.md": "# Harvesting honey\nBeekeepers harvest honey by taking capped combs from the hive and "
    "spinning them in an extractor; the bees are calmed with smoke.",
    "swarm.md": "# Bee swarms\nWhen a bee colony outgrows its hive the old queen leaves with a swarm of "
    "worker bees; a beekeeper can catch the swarm in an empty hive.",
    "varroa.md": "# Varroa mites\nThe varroa mite is a parasite of honey bees that breeds in the brood "
    "comb; beekeepers treat the hive to keep the colony healthy.",
}


@pytest.fixture(scope="module")
def engine(models: Models, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CueRag]:
    yield from notes_engine(models, tmp_path_factory, CORPUS, {**BACKGROUND, **PLANTED})


def _hierarchy(engine: CueRag):  # type: ignore[no-untyped-def]
    graph = engine.graph(CORPUS)
    docs = DocTable.build(graph)
    tfidf, _ = tfidf_vectors(docs.doc_texts(graph))
    return docs, hierarchical_leiden(len(docs), document_edges(graph, docs, tfidf), max_cluster_size=6)


def test_same_corpus_same_hierarchy(engine: CueRag) -> None:
    _, first = _hierarchy(engine)
    _, second = _hierarchy(engine)
    assert {c: (x.level, x.members, x.parent) for c, x in first.communities.items()} == {
        c: (x.level, x.members, x.parent) for c, x in second.communities.items()
    }


def test_planted_theme_is_one_community_whose_report_cites_it(engine: CueRag) -> None:
    index = engine.communities(CORPUS)
    planted = {d for d in index.docs.doc_ids if d.rsplit("/", 1)[-1] in PLANTED}
    assert len(planted) == len(PLANTED)
    leaves = [r for r in index.reports.values() if not r.children]
    home = max(leaves, key=lambda r: len(planted & set(r.documents)))
    assert set(home.documents) == planted  # the whole theme, and nothing else
    assert {e.doc_id for e in home.evidence} <= planted and home.evidence
    assert any(term in home.title for term in ("bee", "hive", "honey", "beekeepers", "colony", "comb"))


def test_global_search_reaches_more_documents_than_dense(engine: CueRag) -> None:
    question = "What do these notes say about keeping honey bees, from the hive to its pests?"
    dense = engine.query(CORPUS, question, method="dense", params=None).chunks[:4]
    retriever = engine.retriever(CORPUS)
    ranked = global_ranking(retriever, engine.communities(CORPUS), question, 4)
    graph = retriever.graph
    global_docs = {graph.chunk_docs[c] for c, _ in ranked}
    assert len(global_docs) == 4 >= len({h.doc_id for h in dense})
    assert {d.rsplit("/", 1)[-1] for d in global_docs} == set(PLANTED)


@pytest.mark.parametrize("method", ["global", "archrag", "leanrag"])
def test_community_methods_answer_like_the_baselines(engine: CueRag, method: str) -> None:
    result = engine.query(CORPUS, "How is bread made?", method=method)  # type: ignore[arg-type]
    assert result.method == method and result.chunks
    assert all(hit.source == method for hit in result.chunks)
    assert len({h.chunk_id for h in result.chunks}) == len(result.chunks)
