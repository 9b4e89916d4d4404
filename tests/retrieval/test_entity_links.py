"""Entity links in the final rerank: from a top chunk to the chunk of another document that shares a
specific entity with the top chunk's sentences nearest the question, in a corpus whose file names
say nothing (no title links to follow)."""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from conftest import notes_engine

import cuerag.cli.app
import cuerag.cli.console
import cuerag.cli.render
from cuerag import CueRag, make_params
from cuerag.graph.title_mentions import folded_words
from cuerag.models.loading import Models
from cuerag.retrieval.entity_links import MAX_LINKED_DOCUMENTS, EntityDocuments, _named_by, follow_entities
from cuerag.retrieval.explain import GraphTitles, explain
from cuerag.retrieval.filters import DocFilter
from cuerag.retrieval.lexical import lexical_share
from cuerag.retrieval.qiter import q_iter
from cuerag.retrieval.results import RetrievalResult
from cuerag.retrieval.scoring import Scorer, TextScorer
from cuerag.retrieval.title_links import TitleEvidence

CORPUS = "notes"
NOTES = {
    # The first hop: the institute's note names its founder.
    # The cafeteria's sentence comes first, so a link from the first sentences would follow the
    # builder; the founder's sentence is the one nearest the question.
    "n01.md": "The cafeteria of the Orvane Institute was rebuilt by Dalgren Builders.\n\n"
    "Marta Kessler founded the Orvane Institute in 1962. The Orvane Institute studies glaciers.\n",
    # The second hop: only the founder's name leads here.
    "n02.md": "Marta Kessler was born in Tallinn and studied physics in Uppsala.\n",
    # A builder three other notes mention: an entity that points at none of them.
    "n03.md": "Dalgren Builders also built the harbour bridge of Rostock.\n",
    "n04.md": "Dalgren Builders restored a chapel in Lund after the storm.\n",
    "n05.md": "Dalgren Builders went bankrupt in a later decade.\n",
}
QUESTION = "Where was the founder of the Orvane Institute born?"


@pytest.fixture(scope="module")
def engine(models: Models, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CueRag]:
    yield from notes_engine(models, tmp_path_factory, CORPUS, NOTES)


def one_hop(
    engine: CueRag,
    filter: DocFilter | None = None,
    *,
    corpus: str = CORPUS,
    question: str = QUESTION,
    **params: object,
) -> RetrievalResult:
    """A walk of one hop from the institute alone (K=1: its nearest entity node, then that node's
    nearest unit), with nothing else that could bring a chunk in (no knowledge anchoring, lexical,
    title or dense candidates): only the institute's note is reached, so whatever else comes back,
    an entity link brought. link_units=1 leaves the head one sentence to link from: the one nearest
    the question, the founder's."""
    chosen = make_params(
        **{
            "k": 1,
            "depth": 1,
            "knowledge_anchoring": False,
            "lexical_weight": 0.0,
            "query_titles": False,
            "title_links": 0,
            "fill_with_dense": False,
            "link_units": 1,
            # Five short notes are as alike as one manual's pages: with the homogeneity floor every
            # query would get the whole lexical share and no bridge. The floor's own tests are below.
            "lexical_homogeneity": False,
            "lexical_floor": 0.0,
            **params,
        }
    )
    result = q_iter(engine.retriever(corpus, filter), question, chosen, entities=["Orvane Institute"])
    assert result.trace is not None
    return result


def docs(result: RetrievalResult) -> list[str]:
    return [h.doc_id for h in result.chunks]


def test_the_entity_names_of_the_notes_are_what_the_links_rely_on(engine: CueRag) -> None:
    names = set(engine.graph(CORPUS).entity_names)
    assert {"Marta Kessler", "Dalgren Builders"} <= names


def test_an_entity_link_reaches_the_passage_the_walk_did_not(engine: CueRag) -> None:
    unlinked = one_hop(engine, entity_links=0)
    assert docs(unlinked) == ["n01.md"]
    linked = one_hop(engine)
    assert "n02.md" in docs(linked)
    head = linked.chunks[0]
    assert head.doc_id == "n01.md"
    born = next(h for h in linked.chunks if h.doc_id == "n02.md")
    # The trace says where it came from and through which entity; it holds no collected unit.
    assert born.linked_from == head.chunk_id and born.unit_ids == []
    steps = [s for s in linked.trace.title_steps if s.kind == "entity_link"]  # type: ignore[union-attr]
    assert (born.chunk_id, "Marta Kessler", head.chunk_id, 1.0) in [
        (s.chunk_id, s.entity, s.from_chunk_id, s.specificity) for s in steps
    ]
    assert linked.trace.entity_linked_chunks == len(steps) >= 1  # type: ignore[union-attr]


@pytest.mark.parametrize("w", [0.5, 0.3])
def test_the_link_score_mixes_the_passages_own_score_with_the_heads_weighed_by_specificity(
    engine: CueRag, w: float
) -> None:
    linked = one_hop(engine, path_weight=w, link_bridge=0.0)
    retriever = engine.retriever(CORPUS)
    g = retriever.graph
    q = retriever.embed_query(QUESTION)
    head = linked.chunks[0]
    born = next(h for h in linked.chunks if h.doc_id == "n02.md")
    own = float(g.chunk_vectors[g.chunk_pos[born.chunk_id]] @ q)  # read against the question alone
    assert born.score == pytest.approx((1 - w) * own + w * head.score * 1.0, abs=1e-4)


def bridge_reading(engine: CueRag, chunk_id: str, bridge: float, entity: str = "Marta Kessler") -> float:
    """The cosine of a chunk with the question plus `bridge` times the entity's stored vector."""
    retriever = engine.retriever(CORPUS)
    g = retriever.graph
    vector = retriever.entity_vectors([g.entity_names.index(entity)])[0]
    hop = retriever.embed_query(QUESTION) + bridge * vector
    return float(g.chunk_vectors[g.chunk_pos[chunk_id]] @ (hop / np.linalg.norm(hop)))


def bridge_of(result: RetrievalResult) -> float:
    assert result.trace is not None
    return result.trace.link_bridge


@pytest.mark.parametrize("bridge", [1.5, 0.7])
def test_the_linked_passage_is_read_against_the_question_plus_the_entity_it_is_linked_through(
    engine: CueRag, bridge: float
) -> None:
    retriever = engine.retriever(CORPUS)
    # The stored vector is the entity's name as the embedder reads it.
    stored = retriever.entity_vectors([retriever.graph.entity_names.index("Marta Kessler")])[0]
    assert float(stored @ retriever.embed_query("Marta Kessler")) > 0.99
    linked = one_hop(engine, link_bridge=bridge)
    # The weight is scaled by one minus the query's lexical share, here the adaptive share alone
    # (no floor), whether or not the lexical channel is on (it is off in one_hop).
    share = lexical_share(retriever.searched_chunk_vectors() @ retriever.embed_query(QUESTION))
    assert 0 < share < 1
    assert bridge_of(linked) == pytest.approx(bridge * (1 - share), abs=1e-4)
    head = linked.chunks[0]
    born = next(h for h in linked.chunks if h.doc_id == "n02.md")
    own = bridge_reading(engine, born.chunk_id, bridge_of(linked))
    assert own > bridge_reading(engine, born.chunk_id, 0.0)  # the next hop is about the founder
    assert born.score == pytest.approx(0.5 * own + 0.5 * head.score * 1.0, abs=1e-4)


def test_each_entity_link_is_read_through_its_own_entity(engine: CueRag) -> None:
    # From the whole head, links go through the founder and the builder: each linked passage is
    # read against the question plus its own entity's vector, not another's.
    linked = one_hop(engine, link_units=50)
    scores = {h.chunk_id: h.score for h in linked.chunks}
    steps = [s for s in linked.trace.title_steps if s.kind == "entity_link"]  # type: ignore[union-attr]
    assert {s.entity for s in steps} == {"Marta Kessler", "Dalgren Builders"}
    for step in steps:
        assert step.entity is not None and step.from_chunk_id is not None
        own = bridge_reading(engine, step.chunk_id, bridge_of(linked), step.entity)
        assert step.score == pytest.approx(0.5 * own + 0.5 * scores[step.from_chunk_id] * step.specificity, abs=1e-4)


def test_the_bridge_takes_what_the_lexical_share_leaves(engine: CueRag) -> None:
    # A floor of a half: the share lies between a half and one, and the bridge gets the rest.
    linked = one_hop(engine, lexical_weight=0.35, lexical_floor=0.5, lexical_candidates=0)
    assert linked.trace is not None
    share = linked.trace.lexical_weight / 0.35
    assert 0.5 <= share < 1
    assert bridge_of(linked) == pytest.approx(1.5 * (1 - share), abs=1e-3)


@pytest.mark.parametrize(
    "params",
    [
        # A floor of 1 gives every query the lexical channel's whole weight, as a corpus on one
        # subject does: the bridge, the embedder's reading of a name, is then left out.
        {"lexical_weight": 0.35, "lexical_floor": 1.0, "lexical_candidates": 0},
        # The same corpus, its homogeneity measured: five short notes count as one subject.
        {"lexical_weight": 0.35, "lexical_homogeneity": True, "lexical_floor": 0.1, "lexical_candidates": 0},
        # The share does not depend on whether the lexical channel adapts, or is on at all.
        {"lexical_weight": 0.35, "lexical_adaptive": False, "lexical_floor": 1.0, "lexical_candidates": 0},
        {"lexical_weight": 0.0, "lexical_floor": 1.0},
    ],
)
def test_a_query_that_gets_the_whole_lexical_share_reads_links_against_the_question_alone(
    engine: CueRag, params: dict[str, object]
) -> None:
    linked = one_hop(engine, **params)
    assert bridge_of(linked) == 0.0
    head = linked.chunks[0]
    born = next(h for h in linked.chunks if h.doc_id == "n02.md")
    own = bridge_reading(engine, born.chunk_id, 0.0)
    assert born.score == pytest.approx(0.5 * own + 0.5 * head.score * 1.0, abs=1e-4)


class _RecordingReranker:
    """A text reranker that scores a passage by its length and records the queries it is given."""

    name = "recording"

    def __init__(self) -> None:
        self.queries: list[str] = []

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        self.queries.append(query)
        return np.asarray([len(p) / 1000 for p in passages], dtype=np.float32)


def test_a_text_reranker_reads_linked_passages_against_the_question_alone_in_one_call(engine: CueRag) -> None:
    # The bridge is a vector; a cross-encoder would need a call per entity to read its name.
    reranker = _RecordingReranker()
    retriever = engine.retriever(CORPUS)
    links = links_for(
        engine,
        QUESTION,
        scorer=TextScorer(retriever.graph, reranker),
        units_per_head=50,
        bridge=1.5,
        entity_vectors=retriever.entity_vectors,
    )
    assert set(links.values()) == {"Marta Kessler", "Dalgren Builders"}
    assert reranker.queries == [QUESTION]


def test_the_reason_given_names_the_entity_and_the_passage_it_came_from(engine: CueRag) -> None:
    result = one_hop(engine)
    why = {h.doc_id: h.why for h in explain(result, GraphTitles(engine.graph(CORPUS))).chunks}
    assert why["n02.md"].kind == "entity_link"
    assert why["n02.md"].text == "entity link: it shares “Marta Kessler” with “n01”, one of the best passages"
    assert why["n02.md"].linked_from_title == "n01"
    assert why["n01.md"].kind == "path"


def test_the_builders_four_documents_weigh_on_a_log_scale(engine: CueRag) -> None:
    index = engine.retriever(CORPUS).derived.entity_documents()
    g = engine.graph(CORPUS)
    builders = g.entity_names.index("Dalgren Builders")
    founder = g.entity_names.index("Marta Kessler")
    assert (int(index.documents[builders]), int(index.documents[founder])) == (4, 2)
    # Three documents besides the one followed from: 1 - log 3 / log 18, not a third.
    expected = 1 - math.log(3) / math.log(MAX_LINKED_DOCUMENTS + 2)
    assert (index.specificity(builders), index.specificity(founder)) == (pytest.approx(expected), 1.0)


def test_an_entitys_weight_falls_as_more_documents_mention_it(engine: CueRag) -> None:
    index = EntityDocuments(engine.graph(CORPUS))  # a copy of its own, to set the counts of
    index.documents.flags.writeable = True
    entity = engine.graph(CORPUS).entity_names.index("Dalgren Builders")
    weights = []
    for documents in range(2, MAX_LINKED_DOCUMENTS + 2):  # the most a link follows
        index.documents[entity] = documents
        weights.append(index.specificity(entity))
    assert weights[0] == 1.0
    assert all(a > b > 0 for a, b in itertools.pairwise(weights))
    assert weights[1] > 1 / 2 and weights[-1] < 1 / MAX_LINKED_DOCUMENTS  # gentler at first, then less


def links_for(
    engine: CueRag, question: str, *, scorer: Scorer | None = None, units_per_head: int = 3, **options: Any
) -> dict[int, str]:
    """follow_entities from the institute's note alone, for `question`: each linked chunk and the
    entity it was linked through."""
    retriever = engine.retriever(CORPUS)
    g = retriever.graph
    institute = g.chunk_docs.index("n01.md")
    links = follow_entities(
        graph=g,
        index=retriever.derived.entity_documents(),
        scorer=scorer or retriever.scorer,
        query=question,
        qvec=retriever.embed_query(question),
        scores={institute: 0.9},
        heads=[institute],
        units_per_head=units_per_head,
        path_weight=0.5,
        allowed=retriever.chunk_allowed,
        **options,
    )
    return {c: g.entity_names[link.entity] for c, link in links.items()}


@pytest.mark.parametrize(
    "question",
    [
        "Where was Marta Kessler of the Orvane Institute born?",
        "where was marta kessler of the orvane institute born?",
        "Where was MARTA KESSLER of the Orvane Institute born?",
    ],
)
def test_an_entity_the_question_names_is_not_linked_through(engine: CueRag, question: str) -> None:
    # The founder is the head's next hop only when the question does not name her: named, a link
    # through her leads to what the question already says, in whatever letter case it is typed.
    assert "Marta Kessler" in links_for(engine, QUESTION).values()
    assert "Marta Kessler" not in links_for(engine, question).values()


def test_only_the_entities_of_the_heads_sentences_nearest_the_question_link(engine: CueRag) -> None:
    # One unit: the founder's sentence links, the cafeteria's (which names the builder) does not.
    # Taken whole, the head would link to a builder's note as well, at a third of the evidence.
    linked = one_hop(engine)
    whole = one_hop(engine, link_units=50)
    assert "Dalgren Builders" in {s.entity for s in whole.trace.title_steps if s.kind == "entity_link"}  # type: ignore[union-attr]
    steps = [s for s in linked.trace.title_steps if s.kind == "entity_link"]  # type: ignore[union-attr]
    assert {s.entity for s in steps} == {"Marta Kessler"}
    assert not {"n03.md", "n04.md", "n05.md"} & set(docs(linked))


def test_a_filter_keeps_entity_links_inside_it(engine: CueRag) -> None:
    assert "n02.md" in docs(one_hop(engine, DocFilter(doc_ids=["n01.md", "n02.md"])))
    assert docs(one_hop(engine, DocFilter(doc_ids=["n01.md", "n03.md"]))) == ["n01.md"]


def test_a_link_goes_down_the_ranking_of_the_heads_never_up(engine: CueRag) -> None:
    # Two heads that share the founder: the best one's link may raise the second (its next hop, as
    # it would be with more heads asked for), the second's link never raises the best.
    retriever = engine.retriever(CORPUS)
    g = retriever.graph
    institute, born = (g.chunk_docs.index(doc) for doc in ("n01.md", "n02.md"))
    for scores in ({institute: 0.9, born: 0.1}, {institute: 0.1, born: 0.9}):
        heads = sorted(scores, key=lambda c: -scores[c])
        links = follow_entities(
            graph=g,
            index=retriever.derived.entity_documents(),
            scorer=retriever.scorer,
            query=QUESTION,
            qvec=retriever.embed_query(QUESTION),
            scores=scores,
            heads=heads,
            units_per_head=3,
            path_weight=0.5,
            allowed=retriever.chunk_allowed,
        )
        assert heads[0] not in links
        assert links[heads[1]].head == heads[0] and g.entity_names[links[heads[1]].entity] == "Marta Kessler"


# A chain goes on across link kinds: a passage an entity link lifts into the best ones has its title
# links followed too (question -> head -> entity link -> the page it names).
CHAIN = "chain"
CHAIN_NOTES = {
    "n01.md": "Marta Kessler founded the Orvane Institute in 1962. The Orvane Institute studies glaciers.\n",
    # Reached only by an entity link (the founder), and names the third note by its title.
    "n02.md": "Marta Kessler was born in Tallinn and studied physics in Uppsala.\n",
    "Tallinn.md": "Its old town, a walled medieval quarter, draws visitors from across the Baltic.\n",
}
CHAIN_QUESTION = "What draws visitors to the birthplace of the founder of the Orvane Institute?"


@pytest.fixture(scope="module")
def chain(models: Models, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CueRag]:
    yield from notes_engine(models, tmp_path_factory, CHAIN, CHAIN_NOTES)


def chain_hop(engine: CueRag, **params: object) -> RetrievalResult:
    return one_hop(engine, corpus=CHAIN, question=CHAIN_QUESTION, **{"title_links": 2, **params})


def test_a_passage_an_entity_link_lifts_has_its_title_links_followed(chain: CueRag) -> None:
    result = chain_hop(chain)
    by_doc = {h.doc_id: h for h in result.chunks}
    assert {"n01.md", "n02.md", "Tallinn.md"} <= set(by_doc)
    assert by_doc["n02.md"].linked_via == "Marta Kessler"
    town = by_doc["Tallinn.md"]
    assert town.linked_from == by_doc["n02.md"].chunk_id and town.linked_via is None
    steps = {s.chunk_id: s for s in result.trace.title_steps}  # type: ignore[union-attr]
    assert steps[town.chunk_id].kind == "title_link"
    assert steps[town.chunk_id].from_chunk_id == by_doc["n02.md"].chunk_id
    # Each linked chunk counts once, under the link that set its score.
    assert (result.trace.linked_chunks, result.trace.entity_linked_chunks) == (1, 1)  # type: ignore[union-attr]


def test_without_the_entity_link_the_chain_stops_at_the_head(chain: CueRag) -> None:
    # The head names no note's title: the town is reached only through the founder's note.
    assert docs(chain_hop(chain, entity_links=0)) == ["n01.md"]
    assert docs(chain_hop(chain, title_links=0)) == ["n01.md", "n02.md"]


def test_a_head_is_followed_once_per_query_over_every_call(chain: CueRag) -> None:
    # A second call after the scores changed follows only heads not yet followed: the founder's
    # note is not followed again with the score its own link raised (it would count it twice).
    retriever = chain.retriever(CHAIN)
    g = retriever.graph
    born = g.chunk_docs.index("n02.md")
    links = TitleEvidence(
        graph=g,
        scorer=retriever.scorer,
        query=CHAIN_QUESTION,
        qvec=retriever.embed_query(CHAIN_QUESTION),
        params=make_params(title_links=1, link_units=1),
        specificity=retriever.derived.title_specificity,
        edges=retriever.derived.link_edges,
    )
    scores = {born: 0.9}
    assert [g.chunk_docs[c] for c in links.follow(scores)] == ["Tallinn.md"]
    scores[born] = 0.99
    assert links.follow(scores) == {}


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("Where was Márta Kessler of the Orvane Institute born?", True),  # accents folded
        ("Where was Kessler of the Orvane Institute born?", False),  # a part of the name is not the name
        ("Where was Marta of the Orvane Institute born?", False),
    ],
)
def test_only_a_question_that_names_all_of_an_entity_skips_its_link(engine: CueRag, question: str, named: bool) -> None:
    assert ("Marta Kessler" not in links_for(engine, question).values()) is named


def test_a_leading_article_or_a_possessive_does_not_hide_a_named_entity() -> None:
    asked = set(folded_words("Where was the Orvane Institute's founder born?"))
    assert _named_by("the Orvane Institute", asked) and _named_by("Orvane Institute", asked)
    assert _named_by("The Orvane Institute", set(folded_words("Who founded Orvane Institute?")))
    assert not _named_by("", asked) and not _named_by("—", asked)


# The town's note also shares a person with the head: it can be reached by an entity link from the
# head and by a title link from the founder's note; it must count once, under the link that set its
# score last.
BOTH_NOTES = {
    **CHAIN_NOTES,
    "n01.md": "Marta Kessler founded the Orvane Institute in 1962 with Piet Varga.\n",
    "Tallinn.md": "Piet Varga guides tours of its old town, a walled medieval quarter, which draws visitors.\n",
}


@pytest.fixture(scope="module")
def both(models: Models, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CueRag]:
    yield from notes_engine(models, tmp_path_factory, "both", BOTH_NOTES)


def test_a_chunk_linked_both_ways_counts_once_under_the_link_that_set_it_last(both: CueRag) -> None:
    # The head's share of a link's score high (path_weight) and every note a head (title_links=3): the
    # title link, which carries the founder's note's raised score, beats the entity link from the head.
    result = one_hop(both, corpus="both", question=CHAIN_QUESTION, title_links=3, path_weight=0.9)
    trace = result.trace
    assert trace is not None
    last = {s.chunk_id: s.kind for s in trace.title_steps}  # steps in order: the last one stands
    town = next(h for h in result.chunks if h.doc_id == "Tallinn.md")
    assert [s.kind for s in trace.title_steps if s.chunk_id == town.chunk_id] == ["entity_link", "title_link"]
    linked = [h for h in result.chunks if h.linked_from is not None]
    for hit in linked:
        assert (hit.linked_via is None) == (last[hit.chunk_id] == "title_link")
    assert trace.linked_chunks == sum(h.linked_via is None for h in linked) == 1
    assert trace.entity_linked_chunks == sum(h.linked_via is not None for h in linked) == 1


def test_an_entity_link_through_a_passages_own_subject_says_which_names_which(chain: CueRag) -> None:
    # "it shares “Tallinn” with “n02”" would do, but "shares “n02” with “n02”" says nothing: when the
    # entity is one passage's subject, the reason says the other names it.
    result = chain_hop(chain)
    town = next(h for h in result.chunks if h.doc_id == "Tallinn.md")
    titles = GraphTitles(chain.graph(CHAIN))

    def reason(via: str) -> str:
        hit = town.model_copy(update={"linked_via": via})
        return explain(result.model_copy(update={"chunks": [hit]}), titles).chunks[0].why.text

    assert (
        reason("Tallinn")
        == "entity link: “n02”, one of the best passages, names “Tallinn”, the subject of this passage"
    )
    assert reason("N02") == "entity link: it names “N02”, the subject of “n02”, one of the best passages"
    assert reason("Marta Kessler") == "entity link: it shares “Marta Kessler” with “n02”, one of the best passages"


def test_the_text_trace_shows_each_link_and_where_each_anchor_came_from(chain: CueRag) -> None:
    result = chain_hop(chain)
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cuerag.cli.render, "out", cuerag.cli.console._Console(file=printed))
        cuerag.cli.render.print_result(explain(result, GraphTitles(chain.graph(CHAIN))), show_trace=True)
    lines = [" ".join(line.split()) for line in printed.getvalue().splitlines()]
    assert any(line.endswith("entity link: n01 → n02 via “Marta Kessler” (specificity 1.00)") for line in lines)
    assert any(line.endswith("title link: n02 → Tallinn (specificity 1.00)") for line in lines)
    anchors = next(line for line in lines if line.startswith("anchors:"))
    assert "(question)" in anchors or "(near the question's “Orvane Institute”)" in anchors
