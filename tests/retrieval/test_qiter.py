"""Q-Iter and the dense baseline on the sample corpus: the paper's toy case, parameters, the
ablation switches, and the errors a bad query gets."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLE

from cuerag.config import QIterParams, Settings
from cuerag.engine.facade import CueRag
from cuerag.engine.params import make_params
from cuerag.errors import CorpusNotFoundError, InvalidNameError, ParameterError
from cuerag.graph.ids import entity_point_id
from cuerag.ingest.documents import Document
from cuerag.models.loading import Models
from cuerag.retrieval.retriever import RetrievalResult, Retriever

TOY = "When did the 1979-80 European Cup winner win the FA Cup?"
EC_SENTENCE = (
    "The European Cup was won by Nottingham Forest in the 1979-80 season, who beat Hamburg 1-0 in the final in Madrid."
)
FA_SENTENCE = "Nottingham Forest won the FA Cup in 1898 and 1959."

QUESTIONS = [
    TOY,
    "Where was the manager of Nottingham Forest born?",
    "In which country is the city where Mozart was born?",
    "Who was the brother of the wife of Lothair II?",
    "Who shared the Nobel Prize with Marie Curie and where was he born?",
    "Which river flows through the city where Mozart died?",
    "Who did Nottingham Forest beat in the 1980 European Cup final and when did that club win the competition?",
    "Which composers worked in the capital of Austria?",
    "Where was the manager who won the league with Derby County born?",
]


def qiter(engine: CueRag, question: str = TOY, **params: object) -> RetrievalResult:
    """Q-Iter with the lexical channel and entity links off unless asked for: these tests check the
    walk's and the title links' own scores (tests/retrieval/test_lexical.py and tests/retrieval/test_entity_links.py
    check the other two)."""
    params = {"lexical_weight": 0.0, "entity_links": 0, **params}
    result = engine.query(SAMPLE, question, params=make_params(**params))
    assert result.method == "qiter"
    assert result.trace is not None
    return result


def scores(result: RetrievalResult) -> list[float]:
    return [h.score for h in result.chunks]


def path_signature(result: RetrievalResult) -> list[list[tuple[str, ...]]]:
    assert result.trace is not None
    return [[tuple(p.unit_ids) for p in d.paths] for d in result.trace.depths]


# ---- the toy case ---------------------------------------------------------------------------------


def test_toy_question_finds_the_second_hop_chunk(sample_engine: CueRag) -> None:
    result = qiter(sample_engine)
    docs = [h.doc_id for h in result.chunks]
    assert len(docs) == 5
    assert "nottingham-forest-fa-cup" in docs
    assert "european-cup-1980" in docs
    fa_hit = next(h for h in result.chunks if h.doc_id == "nottingham-forest-fa-cup")
    assert fa_hit.source == "graph"
    g = sample_engine.graph(SAMPLE)
    assert g.unit_ids[g.unit_texts.index(FA_SENTENCE)] in fa_hit.unit_ids


def test_toy_question_trace_walks_through_nottingham_forest(sample_engine: CueRag) -> None:
    trace = qiter(sample_engine).trace
    assert trace is not None
    walks = [
        p
        for d in trace.depths
        for p in d.paths
        if EC_SENTENCE in p.unit_texts
        and FA_SENTENCE in p.unit_texts
        and p.unit_texts.index(FA_SENTENCE) == p.unit_texts.index(EC_SENTENCE) + 1
    ]
    assert walks, "no kept path goes from the European Cup sentence to the FA Cup sentence"
    for path in walks:
        step = path.unit_texts.index(FA_SENTENCE)
        assert path.via_entities[step] == "Nottingham Forest"
        assert "Nottingham Forest" in path.via_entities
        assert len(path.via_entities) == len(path.unit_ids) == len(path.unit_texts)


def test_results_are_sorted_by_score(sample_engine: CueRag) -> None:
    for question in QUESTIONS[:4]:
        result = qiter(sample_engine, question)
        graph_scores = [h.score for h in result.chunks if h.source == "graph"]
        assert graph_scores == sorted(graph_scores, reverse=True)
        assert len({h.chunk_id for h in result.chunks}) == len(result.chunks)
    toy = qiter(sample_engine)
    assert all(h.source == "graph" for h in toy.chunks)
    assert scores(toy) == sorted(scores(toy), reverse=True)


def test_chunk_scores_are_cosines_with_the_question(sample_engine: CueRag) -> None:
    result = qiter(sample_engine, path_weight=0.0)  # the paper's final rerank: chunks on their own
    retriever = sample_engine.retriever(SAMPLE)
    q = retriever.embed_query(TOY)
    g = retriever.graph
    for hit in result.chunks:
        assert hit.score == pytest.approx(float(g.chunk_vectors[g.chunk_pos[hit.chunk_id]] @ q), abs=1e-5)


def test_chunk_scores_mix_in_path_evidence(sample_engine: CueRag) -> None:
    result = qiter(sample_engine)  # default path_weight 0.5
    assert result.trace is not None
    retriever = sample_engine.retriever(SAMPLE)
    q = retriever.embed_query(TOY)
    g = retriever.graph
    paths = [p for d in result.trace.depths for p in d.paths]
    # The question names two titles ("1979-80 European Cup", "FA Cup"): full evidence for those.
    assert {h.doc_id for h in result.chunks if h.named_in_query} == {"fa-cup", "european-cup-1980"}
    walked = [h for h in result.chunks if h.unit_ids and not h.named_in_query]
    assert walked
    for hit in walked:
        cosine = float(g.chunk_vectors[g.chunk_pos[hit.chunk_id]] @ q)
        evidence = max(p.score for p in paths if set(p.unit_ids) & set(hit.unit_ids))
        assert hit.score == pytest.approx(0.5 * cosine + 0.5 * evidence, abs=1e-4)


def test_trace_depths_are_ranked_and_bounded_by_the_beam(sample_engine: CueRag) -> None:
    result = qiter(sample_engine, beam=3, depth=3)
    trace = result.trace
    assert trace is not None
    assert 1 <= len(trace.depths) <= 3
    for depth, d in enumerate(trace.depths, start=1):
        assert d.depth == depth
        assert 1 <= len(d.paths) <= 3
        assert d.candidates >= len(d.paths)
        path_scores = [p.score for p in d.paths]
        assert path_scores == sorted(path_scores, reverse=True)
        assert all(len(p.unit_ids) == depth for p in d.paths)
        assert all(len(set(p.unit_ids)) == depth for p in d.paths)  # a path never revisits a unit
    collected = {u for d in trace.depths for p in d.paths for u in p.unit_ids}
    assert trace.collected_units == len(collected)
    for hit in result.chunks:
        assert set(hit.unit_ids) <= collected


def test_exact_name_match_links_first(sample_engine: CueRag) -> None:
    retriever = sample_engine.retriever(SAMPLE)
    anchors = retriever.link_mention("FA Cup", 3)
    assert anchors[0].entity_id == entity_point_id("the FA Cup")
    assert anchors[0].score == 1.0
    assert len(anchors) == 3
    assert len({a.entity_id for a in anchors}) == 3


# ---- parameters -----------------------------------------------------------------------------------


@pytest.mark.parametrize("top_n", [1, 2, 3, 7])
def test_top_n_is_respected(sample_engine: CueRag, top_n: int) -> None:
    result = qiter(sample_engine, top_n=top_n)
    assert len(result.chunks) == top_n


def test_smaller_top_n_is_a_prefix(sample_engine: CueRag) -> None:
    five = [h.chunk_id for h in qiter(sample_engine, top_n=5).chunks]
    two = [h.chunk_id for h in qiter(sample_engine, top_n=2).chunks]
    assert two == five[:2]


def test_fill_with_dense_tops_up_after_graph_hits(sample_engine: CueRag) -> None:
    total = len(sample_engine.graph(SAMPLE).chunk_ids)
    filled = qiter(sample_engine, top_n=total)
    reached = filled.trace.candidate_chunks  # type: ignore[union-attr]
    assert 0 < reached < total
    sources = [h.source for h in filled.chunks]
    assert sources == ["graph"] * reached + ["dense"] * (total - reached)
    assert len({h.chunk_id for h in filled.chunks}) == total
    dense_part = [h.score for h in filled.chunks if h.source == "dense"]
    assert dense_part == sorted(dense_part, reverse=True)

    unfilled = qiter(sample_engine, top_n=total, fill_with_dense=False)
    assert [h.chunk_id for h in unfilled.chunks] == [h.chunk_id for h in filled.chunks[:reached]]
    assert all(h.source == "graph" for h in unfilled.chunks)


def test_default_params_are_the_papers() -> None:
    params = make_params()
    assert (params.k, params.depth, params.beam, params.top_n) == (3, 3, 5, 5)
    assert params.knowledge_anchoring and params.spreading_activation and params.query_update
    assert make_params(k=None, top_n=None) == QIterParams()
    assert make_params(k=7, depth=0, beam=50, top_n=100) == QIterParams(k=7, depth=0, beam=50, top_n=100)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("k", 0),
        ("k", 51),
        ("depth", -1),
        ("depth", 11),
        ("beam", 0),
        ("beam", 51),
        ("top_n", 0),
        ("top_n", 101),
    ],
)
def test_out_of_range_parameters(field: str, value: int) -> None:
    with pytest.raises(ParameterError) as err:
        make_params(**{field: value})
    message = str(err.value)
    assert re.search(rf"(^|[ ;]){field}: ", message), message
    assert f"(got {value}; allowed " in message
    low, high = {"k": (1, 50), "depth": (0, 10), "beam": (1, 50), "top_n": (1, 100)}[field]
    assert f"allowed {low}..{high})" in message
    other_fields = {"k", "depth", "beam", "top_n"} - {field}
    assert not any(re.search(rf"(^|[ ;]){f}: ", message) for f in other_fields)


def test_all_bad_parameters_are_named_at_once() -> None:
    with pytest.raises(ParameterError) as err:
        make_params(k=0, top_n=0)
    assert "k: " in str(err.value) and "top_n: " in str(err.value)


def test_unknown_method(sample_engine: CueRag) -> None:
    with pytest.raises(ParameterError, match="unknown method 'sparse'"):
        sample_engine.query(SAMPLE, TOY, method="sparse")  # type: ignore[arg-type]


# ---- ablations ------------------------------------------------------------------------------------


def test_without_spreading_activation_no_query_entity_anchors(sample_engine: CueRag) -> None:
    full = qiter(sample_engine)
    assert any(a.source == "query_entity" for a in full.trace.anchors)  # type: ignore[union-attr]
    assert full.trace.query_entities  # type: ignore[union-attr]

    result = qiter(sample_engine, spreading_activation=False)
    trace = result.trace
    assert trace is not None
    assert trace.query_entities == []
    assert trace.anchors
    assert all(a.source == "unit" for a in trace.anchors)
    assert trace.depths


def test_without_knowledge_anchoring_no_unit_anchors(sample_engine: CueRag) -> None:
    full = qiter(sample_engine)
    assert any(a.source == "unit" for a in full.trace.anchors)  # type: ignore[union-attr]

    trace = qiter(sample_engine, knowledge_anchoring=False).trace
    assert trace is not None
    assert trace.anchors
    assert all(a.source == "query_entity" for a in trace.anchors)
    assert trace.depths


def test_without_any_anchoring_only_the_titles_the_question_names_are_reached(sample_engine: CueRag) -> None:
    # With link hops on, the named titles are where the walk starts (tests/retrieval/test_link_hops.py); off,
    # the final rerank alone adds them.
    off = {"knowledge_anchoring": False, "spreading_activation": False}
    walked = qiter(sample_engine, **off, top_n=3)
    assert walked.trace is not None and walked.trace.anchors == [] and walked.trace.depths
    first = walked.trace.depths[0].paths
    assert first and all(p.via_kinds == ["title"] for p in first)
    assert {p.via_entities[0] for p in first} <= {"1979-80 European Cup", "FA Cup"}
    result = qiter(sample_engine, **off, top_n=3, link_hops=False)
    trace = result.trace
    assert trace is not None
    assert (trace.anchors, trace.depths, trace.collected_units, trace.candidate_chunks) == ([], [], 0, 2)
    assert (trace.named_chunks, trace.linked_chunks) == (2, 0)
    assert all(h.named_in_query for h in result.chunks[:2])
    assert [(h.doc_id, h.source) for h in result.chunks[:2]] == [("european-cup-1980", "graph"), ("fa-cup", "graph")]
    assert result.chunks[2].source == "dense"


def test_without_any_anchoring_there_is_no_walk(sample_engine: CueRag) -> None:
    filled = qiter(
        sample_engine, knowledge_anchoring=False, spreading_activation=False, query_titles=False, link_hops=False
    )
    trace = filled.trace
    assert trace is not None
    assert (trace.anchors, trace.depths, trace.collected_units, trace.candidate_chunks) == ([], [], 0, 0)
    dense = sample_engine.query(SAMPLE, TOY, method="dense")
    assert [h.source for h in filled.chunks] == ["dense"] * 5
    assert [h.chunk_id for h in filled.chunks] == [h.chunk_id for h in dense.chunks]

    empty = qiter(
        sample_engine,
        knowledge_anchoring=False,
        spreading_activation=False,
        query_titles=False,
        fill_with_dense=False,
        link_hops=False,
    )
    assert empty.chunks == []


def test_depth_zero_is_the_dense_baseline(sample_engine: CueRag) -> None:
    result = qiter(sample_engine, depth=0)
    assert result.trace.depths == []  # type: ignore[union-attr]
    assert result.trace.anchors  # anchoring still ran  # type: ignore[union-attr]
    dense = sample_engine.query(SAMPLE, TOY, method="dense")
    assert [h.chunk_id for h in result.chunks] == [h.chunk_id for h in dense.chunks]


def test_query_vector_subtracts_units(sample_engine: CueRag) -> None:
    retriever = sample_engine.retriever(SAMPLE)
    g = retriever.graph
    ec = g.unit_texts.index(EC_SENTENCE)
    fa = g.unit_texts.index(FA_SENTENCE)
    raw = retriever.query_vector(TOY)
    assert np.allclose(raw, retriever.embed_query(TOY))
    once = retriever.query_vector(TOY, [g.unit_ids[ec]])
    assert np.allclose(once, raw - g.unit_vectors[ec])
    twice = retriever.query_vector(TOY, [g.unit_ids[ec], g.unit_ids[fa]])
    assert np.allclose(twice, raw - g.unit_vectors[ec] - g.unit_vectors[fa])


def test_update_reorders_an_entitys_units(sample_engine: CueRag) -> None:
    retriever = sample_engine.retriever(SAMPLE)
    g = retriever.graph
    forest = g.entity_pos[entity_point_id("Nottingham Forest")]
    ec = g.unit_texts.index(EC_SENTENCE)
    n = len(g.entity_units[forest])
    assert n >= 3
    raw = [u for u, _ in retriever.adjacent_units(forest, retriever.query_vector(TOY), n)]
    updated = [u for u, _ in retriever.adjacent_units(forest, retriever.query_vector(TOY, [g.unit_ids[ec]]), n)]
    assert sorted(raw) == sorted(updated) == sorted(g.entity_units[forest])
    # The unit already on the path is the best match for the raw query and the worst once subtracted.
    assert raw[0] == ec
    assert updated[-1] == ec
    assert raw != updated
    # Excluding a unit removes it; k cuts the list.
    assert ec not in [u for u, _ in retriever.adjacent_units(forest, retriever.query_vector(TOY), n, {ec})]
    assert len(retriever.adjacent_units(forest, retriever.query_vector(TOY), 2)) == 2


def _check_paths_follow_the_update_rule(retriever: Retriever, result: RetrievalResult, k: int, update: bool) -> int:
    """Every step of every kept path picks one of the top-k units of its via entity, scored against
    the query minus the path's earlier units (update) or the raw query (no update). Returns the
    number of steps checked."""
    g = retriever.graph
    q = retriever.embed_query(result.query)
    checked = 0
    assert result.trace is not None
    for depth in result.trace.depths:
        for path in depth.paths:
            vector = q
            for i, (uid, via) in enumerate(zip(path.unit_ids, path.via_entities, strict=True)):
                entity = g.entity_pos[entity_point_id(via)]
                earlier = path.unit_ids[:i]
                if update and i:
                    vector = vector - g.unit_vectors[g.unit_pos[earlier[-1]]]  # = query_vector(q, earlier)
                exclude = {g.unit_pos[u] for u in earlier}
                top = [u for u, _ in retriever.adjacent_units(entity, vector, k, exclude)]
                assert g.unit_pos[uid] in top, (result.query, path.unit_texts, i)
                if i:
                    assert entity in g.unit_entities[g.unit_pos[earlier[-1]]]  # reached through the last unit
                checked += 1
    return checked


@pytest.mark.parametrize("k", [1, 2])
def test_paths_follow_the_query_update_setting(sample_engine: CueRag, k: int) -> None:
    retriever = sample_engine.retriever(SAMPLE)
    steps = 0
    for question in QUESTIONS:
        for update in (True, False):
            result = qiter(sample_engine, question, k=k, query_update=update)
            steps += _check_paths_follow_the_update_rule(retriever, result, k, update)
    assert steps > 50


def test_query_update_changes_the_walk(sample_engine: CueRag) -> None:
    retriever = sample_engine.retriever(SAMPLE)
    differing = 0
    for question in QUESTIONS:
        updated = qiter(sample_engine, question, k=1, query_update=True)
        raw = qiter(sample_engine, question, k=1, query_update=False)
        if path_signature(updated) == path_signature(raw):
            continue
        differing += 1
        # Where the walks differ, each one breaks the other setting's rule: the check above can fail.
        with pytest.raises(AssertionError):
            _check_paths_follow_the_update_rule(retriever, updated, 1, update=False)
        with pytest.raises(AssertionError):
            _check_paths_follow_the_update_rule(retriever, raw, 1, update=True)
    assert differing >= 1


# ---- dense baseline -------------------------------------------------------------------------------


@pytest.mark.parametrize("top_n", [1, 5, 15])
def test_dense_is_the_top_chunks_by_cosine(sample_engine: CueRag, top_n: int) -> None:
    result = sample_engine.query(SAMPLE, TOY, method="dense", params=make_params(top_n=top_n))
    assert result.method == "dense"
    assert result.trace is None
    assert len(result.chunks) == top_n
    assert all(h.source == "dense" and h.unit_ids == [] for h in result.chunks)
    assert scores(result) == sorted(scores(result), reverse=True)
    retriever = sample_engine.retriever(SAMPLE)
    g = retriever.graph
    cosines = g.chunk_vectors @ retriever.embed_query(TOY)
    expected = [g.chunk_ids[c] for c in np.argsort(-cosines, kind="stable")[:top_n]]
    assert [h.chunk_id for h in result.chunks] == expected
    for hit in result.chunks:
        assert hit.score == pytest.approx(float(cosines[g.chunk_pos[hit.chunk_id]]), abs=1e-4)
        assert hit.doc_id == g.chunk_docs[g.chunk_pos[hit.chunk_id]]
    assert result.chunks[0].doc_id == "european-cup-1980"


# ---- errors ---------------------------------------------------------------------------------------


def test_unknown_corpus_lists_existing_ones(sample_engine: CueRag) -> None:
    with pytest.raises(CorpusNotFoundError) as err:
        sample_engine.query("wikipedia", TOY)
    assert str(err.value) == "unknown corpus 'wikipedia'; corpora that exist: sample"
    assert err.value.available == ["sample"]
    with pytest.raises(CorpusNotFoundError):
        sample_engine.query("wikipedia", TOY, method="dense")


def test_unknown_corpus_on_an_empty_store(engine: CueRag) -> None:
    with pytest.raises(CorpusNotFoundError, match="none yet"):
        engine.query("anything", TOY)


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_empty_query(sample_engine: CueRag, question: str) -> None:
    with pytest.raises(ParameterError, match="query is empty"):
        sample_engine.query(SAMPLE, question)
    with pytest.raises(ParameterError, match="query is empty"):
        sample_engine.query(SAMPLE, question, method="dense")


@pytest.mark.parametrize("name", ["bad name", "../sample", "", "-leading-dash", "x" * 65, "sample/units", "é"])
def test_invalid_corpus_name(sample_engine: CueRag, name: str) -> None:
    with pytest.raises(InvalidNameError, match="invalid corpus name"):
        sample_engine.query(name, TOY)


# ---- title links (beyond the paper; docs/deviations.md "Title links") ------------------------------------------

MANAGER = "Where was the manager of Nottingham Forest born?"
LOTHAIR = "Who was the brother of the wife of Lothair II?"


def test_a_chunk_named_by_a_top_chunk_comes_in_through_its_title_link(sample_engine: CueRag) -> None:
    retriever = sample_engine.retriever(SAMPLE)
    g = retriever.graph
    q = retriever.embed_query(MANAGER)
    linked = qiter(sample_engine, MANAGER)
    assert linked.trace is not None and linked.trace.linked_chunks == 2
    by_doc = {h.doc_id: h for h in linked.chunks}
    clough, town = by_doc["brian-clough"], by_doc["middlesbrough"]
    # Brian Clough's chunk says he was "born in Middlesbrough": that chunk's title. The walk did
    # not reach it, so it comes in through the link alone.
    assert town.linked_from == clough.chunk_id and town.unit_ids == [] and town.source == "graph"
    hop = q + g.chunk_vectors[g.chunk_pos[clough.chunk_id]]
    hop = hop / np.linalg.norm(hop)
    second_hop = float(g.chunk_vectors[g.chunk_pos[town.chunk_id]] @ hop)
    # Links are followed from the candidates as the walk and the query's titles scored them.
    walked = {h.doc_id: h for h in qiter(sample_engine, MANAGER, title_links=0).chunks}
    assert town.score == pytest.approx(0.5 * second_hop + 0.5 * 1.1 * walked["brian-clough"].score, abs=1e-4)
    # The club's chunk names "Brian Clough", whom the walk reached too: see the next test.
    assert clough.linked_from == by_doc["nottingham-forest-club"].chunk_id and clough.unit_ids
    assert {h.doc_id for h in linked.chunks if h.linked_from} == {"middlesbrough", "brian-clough"}

    unlinked = qiter(sample_engine, MANAGER, title_links=0)
    assert unlinked.trace is not None and unlinked.trace.linked_chunks == 0
    assert all(h.linked_from is None for h in unlinked.chunks)
    assert [h.doc_id for h in unlinked.chunks] == list(walked)
    assert list(walked).index("middlesbrough") > [h.doc_id for h in linked.chunks].index("middlesbrough")


def test_a_link_raises_a_chunk_the_walk_reached_when_the_link_scores_higher(sample_engine: CueRag) -> None:
    question = "Where was the person who shared the Nobel Prize with Marie Curie born?"
    retriever = sample_engine.retriever(SAMPLE)
    g = retriever.graph
    q = retriever.embed_query(question)
    linked = {h.doc_id: h for h in qiter(sample_engine, question, top_n=15).chunks}
    walked = {h.doc_id: h for h in qiter(sample_engine, question, top_n=15, title_links=0).chunks}
    curie, becquerel = linked["marie-curie"], linked["henri-becquerel"]
    # The walk reached Becquerel's chunk (it holds collected units); Curie's chunk names him, and
    # that link scores higher than the walk's path did.
    assert becquerel.unit_ids == walked["henri-becquerel"].unit_ids != []
    assert becquerel.linked_from == curie.chunk_id
    hop = q + g.chunk_vectors[g.chunk_pos[curie.chunk_id]]
    hop = hop / np.linalg.norm(hop)
    second_hop = float(g.chunk_vectors[g.chunk_pos[becquerel.chunk_id]] @ hop)
    assert becquerel.score == pytest.approx(0.5 * second_hop + 0.5 * 1.1 * walked["marie-curie"].score, abs=1e-4)
    assert becquerel.score > walked["henri-becquerel"].score
    # Every other chunk keeps the score the walk gave it: a link never lowers one.
    for doc, hit in linked.items():
        if hit.linked_from is None and doc in walked:
            assert hit.score == pytest.approx(walked[doc].score, abs=1e-6)
        elif hit.linked_from is not None and doc in walked:
            assert hit.score > walked[doc].score


def test_links_are_followed_again_from_a_chunk_a_link_lifted_into_the_top(sample_engine: CueRag) -> None:
    # A chain of three passages: the club's chunk names its manager, whose chunk names his town.
    question = "What industry grew in the birthplace of the manager who won the European Cup with Nottingham Forest?"
    retriever = sample_engine.retriever(SAMPLE)
    g = retriever.graph
    q = retriever.embed_query(question)
    result = qiter(sample_engine, question)
    by_doc = {h.doc_id: h for h in result.chunks}
    club, clough, town = by_doc["nottingham-forest-club"], by_doc["brian-clough"], by_doc["middlesbrough"]
    walked = {h.doc_id: h for h in qiter(sample_engine, question, title_links=0, top_n=10).chunks}
    # The walk put the manager's chunk below the top two; the club's link lifted it to the top...
    assert list(walked).index("brian-clough") >= 2
    assert clough.linked_from == club.chunk_id and clough.score > walked["brian-clough"].score
    assert [h.doc_id for h in result.chunks[:2]] == ["brian-clough", "nottingham-forest-club"]
    # ... so its own link was followed in a second round, scored from its lifted score.
    assert town.linked_from == clough.chunk_id
    hop = q + g.chunk_vectors[g.chunk_pos[clough.chunk_id]]
    hop = hop / np.linalg.norm(hop)
    second_hop = float(g.chunk_vectors[g.chunk_pos[town.chunk_id]] @ hop)
    assert town.score == pytest.approx(0.5 * second_hop + 0.5 * 1.1 * clough.score, abs=1e-4)
    assert town.score > walked["middlesbrough"].score


def test_a_chunk_the_question_names_by_title_gets_the_evidence_of_an_exact_link(sample_engine: CueRag) -> None:
    retriever = sample_engine.retriever(SAMPLE)
    g = retriever.graph
    for question in (LOTHAIR, LOTHAIR.lower()):  # a typed, all-lower-case question names it too
        q = retriever.embed_query(question)
        named = next(h for h in qiter(sample_engine, question, title_links=0).chunks if h.doc_id == "lothair-ii")
        assert named.named_in_query and named.linked_from is None
        cosine = float(g.chunk_vectors[g.chunk_pos[named.chunk_id]] @ q)
        # The evidence of an exact link, weighed by how specific the title is in the corpus; the
        # chunk keeps the walk's score when that is higher.
        specificity = retriever.derived.title_specificity().of(g.title_index.named_in("Lothair II")[0].title)
        assert 0.5 < specificity < 1.0  # one other document names Lothair II
        plain = qiter(sample_engine, question, query_titles=False, title_links=0).chunks
        walked = next(h for h in plain if h.doc_id == "lothair-ii")
        assert not walked.named_in_query
        assert named.score == pytest.approx(max(0.5 * cosine + 0.5 * specificity, walked.score), abs=1e-4)
        full = qiter(sample_engine, question, title_links=0, title_specificity=False).chunks
        assert next(h for h in full if h.doc_id == "lothair-ii").score == pytest.approx(0.5 * cosine + 0.5, abs=1e-4)


def test_title_links_follow_the_paper_when_switched_off(sample_engine: CueRag) -> None:
    # TOY names two titles; with both switches off nothing is named or linked, and the final
    # scores are the paper's: each chunk's cosine with the question.
    on = qiter(sample_engine, TOY, path_weight=0.0)
    assert on.trace is not None and on.trace.named_chunks == 2
    paper = qiter(sample_engine, TOY, title_links=0, query_titles=False, path_weight=0.0)
    assert paper.trace is not None and (paper.trace.named_chunks, paper.trace.linked_chunks) == (0, 0)
    retriever = sample_engine.retriever(SAMPLE)
    q = retriever.embed_query(TOY)
    g = retriever.graph
    for hit in paper.chunks:
        assert hit.linked_from is None and not hit.named_in_query
        assert hit.score == pytest.approx(float(g.chunk_vectors[g.chunk_pos[hit.chunk_id]] @ q), abs=1e-5)


def test_trace_times_every_stage_it_ran(sample_engine: CueRag) -> None:
    from cuerag.retrieval.stages import STAGES

    trace = qiter(sample_engine).trace
    assert trace is not None
    stages = trace.stage_ms
    assert {"embed", "ner", "entity_linking", "anchor_units", "beam", "rerank", "links"} <= set(stages) <= set(STAGES)
    assert all(ms >= 0.0 for ms in stages.values())
    # A stage switched off is not timed.
    off = qiter(sample_engine, spreading_activation=False).trace
    assert off is not None and "ner" not in off.stage_ms


def test_title_evidence_is_in_the_trace(sample_engine: CueRag) -> None:
    result = qiter(sample_engine, MANAGER)
    assert result.trace is not None
    by_doc = {h.doc_id: h for h in result.chunks}
    town, clough = by_doc["middlesbrough"], by_doc["brian-clough"]
    steps = [s for s in result.trace.title_steps if s.chunk_id == town.chunk_id]
    # The link from Brian Clough's chunk set the town's score; only that chunk names the town, so
    # the title keeps its full weight.
    assert [(s.kind, s.from_chunk_id) for s in steps] == [("title_link", clough.chunk_id)]
    assert steps[0].specificity == 1.0 and steps[0].score == pytest.approx(town.score, abs=1e-5)
    named = qiter(sample_engine, LOTHAIR, title_links=0)
    assert named.trace is not None
    (step,) = [s for s in named.trace.title_steps if s.title == "Lothair II"]
    assert step.kind == "named_in_query" and step.from_chunk_id is None and 0.0 < step.specificity < 1.0


# ---- the fast path gives the results of the plain one ----------------------------------------------


def test_the_embedders_single_batch_gives_the_same_ranking_and_trace(
    sample_engine: CueRag, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query-time shortcut (a single batch encoded without sentence-transformers' per-call
    work) changes no vector, score, ranking or trace: compared, bit for bit, with every encoding
    through sentence-transformers' `encode`, the lexical channel on, with and without a filter."""
    from cuerag.models.embedders import SentenceTransformerEmbedder
    from cuerag.retrieval.filters import DocFilter

    embedder = sample_engine.models.embedder
    assert isinstance(embedder, SentenceTransformerEmbedder) and embedder._plain  # the path under test is taken
    texts = [QUESTIONS[1], "Nottingham Forest", "FA Cup", "1979-80"]
    fast = embedder.encode(texts)
    some = DocFilter(doc_ids=["european-cup-1980", "nottingham-forest-club", "brian-clough", "middlesbrough", "fa-cup"])
    cases = [(q, None) for q in QUESTIONS[:5]] + [(QUESTIONS[1], some), (TOY, some)]

    def run() -> list[dict[str, object]]:
        out = []
        for question, filter in cases:
            result = sample_engine.query(SAMPLE, question, params=QIterParams(top_n=10), filter=filter)
            dumped = result.model_dump(exclude={"elapsed_ms"})
            dumped["trace"].pop("stage_ms")
            out.append(dumped)
        return out

    shortcut = run()
    monkeypatch.setattr(embedder, "_plain", False)  # every call through sentence-transformers' encode
    assert run() == shortcut
    assert np.array_equal(embedder.encode(texts), fast)


def test_a_single_batch_runs_torch_on_one_thread_and_restores_the_count(
    sample_engine: CueRag, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query's encode is too small to split across cores (splitting made it slower, docs/performance.md
    *Threads*): the forward pass runs on one thread and the count set before comes back after;
    a bulk encode keeps it."""
    import torch

    from cuerag.models.embedders import SentenceTransformerEmbedder

    embedder = sample_engine.models.embedder
    assert isinstance(embedder, SentenceTransformerEmbedder)
    model = embedder._model
    seen: list[int] = []
    forward = model.forward

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(torch.get_num_threads())
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", spy)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        embedder.encode(["Who managed Nottingham Forest?", "Brian Clough"], batch_size=64)
        assert seen == [1] and torch.get_num_threads() == 2
        embedder.encode(["one", "two", "three"], batch_size=2)  # more than a batch: every core
        assert seen[1:] == [2, 2]
    finally:
        torch.set_num_threads(before)


def test_a_bulk_index_encode_keeps_every_core_whatever_the_batch_size(
    models: Models, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/performance.md *Threads*: "a single short batch (a query, its mentions) runs torch on one thread ...
    and bulk encodes keep every core". The shortcut is taken for any call of at most
    `embed_batch_size` texts, so with CUERAG_EMBED_BATCH_SIZE >= 512 (the indexer's slice) every
    indexing encode runs on one thread; at the default 64 so does every stage's last slice (64
    whole chunks of up to 256 tokens is no query)."""
    import torch

    from cuerag.models.embedders import SentenceTransformerEmbedder

    embedder = models.embedder
    assert isinstance(embedder, SentenceTransformerEmbedder)
    model = embedder._model
    seen: list[tuple[int, int]] = []  # (tokens in the forward pass, torch threads)
    forward = model.forward

    def spy(features: dict, *args: object, **kwargs: object) -> object:  # type: ignore[type-arg]
        seen.append((int(features["attention_mask"].sum()), torch.get_num_threads()))
        return forward(features, *args, **kwargs)

    monkeypatch.setattr(model, "forward", spy)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    engine = CueRag(Settings(data_dir=tmp_path, embed_batch_size=512), models=models)
    try:
        docs = [
            Document(id=f"d{n}", title=f"Line {n}", text=" ".join(f"Stop {n}-{k} is on line {k}." for k in range(10)))
            for n in range(60)
        ]  # 600 sentences, 60 chunks: an index run, no query
        engine.index_documents("c", docs)
        bulk = [threads for tokens, threads in seen if tokens >= 2000]  # no query is that long
        assert bulk and set(bulk) == {2}, seen
    finally:
        torch.set_num_threads(before)
        engine.close()
