"""Q-Iter's lexical channel: BM25 evidence over units and chunks, scaled per query, fused with the
embedder's cosine where Q-Iter chooses text. A small corpus of technical notes whose answer turns
on an identifier the embedder cannot tell from its neighbour (QX4471 against QX4472)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import EngineFactory

from cuerag import CueRag, Settings, make_document, make_params
from cuerag.models.loading import Models
from cuerag.retrieval.filters import DocFilter
from cuerag.retrieval.lexical import (
    DIVERSE_CORPUS,
    ONE_SUBJECT_CORPUS,
    LexicalFusion,
    LexicalIndex,
    LexicalScores,
    corpus_homogeneity,
    homogeneity_floor,
    lexical_share,
)
from cuerag.retrieval.scoring import VectorScorer

NOTES = [
    ("Cache settings", "The spill threshold sets how many pages the cache holds before it writes them out. "
     "Raising it uses more memory and fewer writes."),
    ("Memory use", "The library keeps pages in memory while a transaction runs. "
     "Large transactions use more memory than small ones."),
    ("Disk writes", "Pages are written to disk when a transaction commits, or earlier when memory runs short."),
    ("Journal", "The journal records each change so that a crash in the middle of a transaction can be rolled back."),
    ("Status codes", "Code QX4471 is returned when the page cache cannot grow any further. "
     "Code QX4472 is returned when the journal is full."),
]  # fmt: skip
CORPUS = "notes"
QUESTION = "What does QX4471 mean?"


@pytest.fixture(scope="module")
def notes(models: Models, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CueRag]:
    data: Path = tmp_path_factory.mktemp("lexical")
    engine = CueRag(Settings(data_dir=data), models=models)
    engine.index_documents(CORPUS, [make_document(t, x) for t, x in NOTES])
    yield engine
    engine.close()


def test_scores_are_scaled_to_the_best_match_and_ignore_case(notes: CueRag) -> None:
    retriever = notes.retriever(CORPUS)
    scores = retriever.lexical_scores(QUESTION)
    graph = retriever.graph
    best = int(np.argmax(scores.units))
    assert "QX4471" in graph.unit_texts[best] and scores.units[best] == pytest.approx(1.0)
    assert float(scores.chunks.max()) == pytest.approx(1.0)
    assert graph.chunk_titles[int(np.argmax(scores.chunks))] == "Status codes"
    same = retriever.lexical_scores(QUESTION.lower())
    assert np.array_equal(same.units, scores.units) and np.array_equal(same.chunks, scores.chunks)
    nothing = retriever.lexical_scores("zebra quokka")  # no term in the corpus: no evidence at all
    assert not nothing.units.any() and not nothing.chunks.any()


def test_the_unit_naming_the_identifier_anchors_the_walk(notes: CueRag) -> None:
    params = {"k": 1, "top_n": 3, "lexical_adaptive": False}
    fused = notes.query(CORPUS, QUESTION, params=make_params(lexical_weight=0.3, **params))
    assert fused.trace is not None
    units = [a.mention for a in fused.trace.anchors if a.source == "unit"]
    assert units and "QX4471" in units[0]
    assert "lexical" in fused.trace.stage_ms
    assert fused.chunks[0].title == "Status codes"
    plain = notes.query(CORPUS, QUESTION, params=make_params(lexical_weight=0.0, **params))
    assert plain.trace is not None and "lexical" not in plain.trace.stage_ms  # off: not even computed


def test_fusion_is_a_convex_combination_with_the_embedders_scores(notes: CueRag) -> None:
    retriever = notes.retriever(CORPUS)
    graph = retriever.graph
    inner = VectorScorer(graph)
    lexical = LexicalScores(
        units=np.linspace(0, 1, len(graph.unit_ids), dtype=np.float32),
        chunks=np.linspace(1, 0, len(graph.chunk_ids), dtype=np.float32),
    )
    qvec = retriever.embed_query(QUESTION)
    fusion = LexicalFusion(inner, lexical, 0.25)
    paths = [[0, 1], [2]]
    expected = 0.75 * inner.score_paths(QUESTION, qvec, paths) + 0.25 * np.asarray(
        [lexical.units[[0, 1]].mean(), lexical.units[2]]
    )
    assert np.allclose(fusion.score_paths(QUESTION, qvec, paths), expected)
    chunks = [0, 2]
    expected = 0.75 * inner.score_chunks(QUESTION, qvec, chunks) + 0.25 * lexical.chunks[chunks]
    assert np.allclose(fusion.score_chunks(QUESTION, qvec, chunks), expected)


def test_the_best_lexical_chunks_join_the_candidates_no_path_reached(notes: CueRag) -> None:
    """No walk (depth 0), no titles, no dense fill: only the lexical channel can bring a chunk."""
    walkless = {"depth": 0, "query_titles": False, "title_links": 0, "fill_with_dense": False, "top_n": 3}
    walkless |= {"lexical_adaptive": False}
    alone = notes.query(CORPUS, QUESTION, params=make_params(lexical_weight=0.3, lexical_candidates=1, **walkless))
    assert [(h.title, h.source, h.unit_ids) for h in alone.chunks] == [("Status codes", "graph", [])]
    without = notes.query(CORPUS, QUESTION, params=make_params(lexical_weight=0.3, lexical_candidates=0, **walkless))
    assert without.chunks == []


def test_the_lexical_share_follows_how_far_the_best_dense_match_stands_out() -> None:
    rng = np.random.default_rng(0)
    noise = rng.normal(0.3, 0.05, 2000).astype(np.float32)  # a corpus no text of which stands out
    assert lexical_share(noise) == pytest.approx(1.0)
    clear = noise.copy()
    clear[7] = 0.3 + 0.05 * 8  # eight deviations above the mean: far beyond chance
    assert lexical_share(clear) == 0.0
    between = noise.copy()
    chance = np.sqrt(2 * np.log(2000))
    between[7] = 0.3 + 0.05 * (chance + 0.5 * np.pi / np.sqrt(6) / chance)  # half a spread above chance
    assert 0.2 < lexical_share(between) < 0.8
    assert lexical_share(np.full(5, 0.4, dtype=np.float32)) == 1.0  # no spread: nothing to tell apart


def test_the_weight_a_query_gets_is_in_its_trace(notes: CueRag) -> None:
    retriever = notes.retriever(CORPUS)
    share = lexical_share(retriever.graph.chunk_vectors @ retriever.embed_query(QUESTION))
    # The notes are on one subject: without lexical_homogeneity=False their floor would be the whole weight.
    only_share = {"lexical_floor": 0.0, "lexical_homogeneity": False}
    adaptive = notes.query(CORPUS, QUESTION, params=make_params(lexical_weight=0.4, **only_share))
    fixed = notes.query(CORPUS, QUESTION, params=make_params(lexical_weight=0.4, lexical_adaptive=False))
    assert adaptive.trace is not None and fixed.trace is not None
    assert adaptive.trace.lexical_weight == pytest.approx(0.4 * share, abs=1e-4)
    assert fixed.trace.lexical_weight == pytest.approx(0.4)


@pytest.mark.parametrize("floor", [0.1, 0.5, 1.0])
def test_a_query_the_embedder_is_sure_of_keeps_the_floor_of_the_lexical_weight(notes: CueRag, floor: float) -> None:
    """The adaptive share is 0 where the best dense match stands out of the corpus; the floor keeps
    a part of the weight (and of the lexical candidates) for every query, all of it at 1."""
    retriever = notes.retriever(CORPUS)
    share = lexical_share(retriever.graph.chunk_vectors @ retriever.embed_query(QUESTION))
    params = make_params(lexical_weight=0.4, lexical_floor=floor, lexical_homogeneity=False)
    result = notes.query(CORPUS, QUESTION, params=params)
    assert result.trace is not None
    assert result.trace.lexical_weight == pytest.approx(0.4 * (floor + (1 - floor) * share), abs=1e-4)
    assert result.trace.lexical_weight >= 0.4 * floor - 1e-6


def test_homogeneity_is_the_mean_cosine_between_two_distinct_texts() -> None:
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(40, 16)).astype(np.float32) + 0.8  # a shared direction: alike texts
    vectors[3] *= 5.0  # length does not count, only direction
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = unit @ unit.T
    pairwise = (cosines.sum() - np.trace(cosines)) / (40 * 39)
    assert corpus_homogeneity(vectors) == pytest.approx(float(pairwise), abs=1e-5)
    assert corpus_homogeneity(np.tile(vectors[:1], (6, 1))) == pytest.approx(1.0)
    assert abs(corpus_homogeneity(rng.normal(size=(400, 384)))) < 0.01  # unrelated texts
    assert corpus_homogeneity(vectors[:1]) == 0.0  # one text: no pair
    with_zeros = np.vstack([np.tile(vectors[:1], (2, 1)), np.zeros((2, 16), dtype=np.float32)])
    assert corpus_homogeneity(with_zeros) == pytest.approx(1.0)  # a zero vector has no direction: left out


def test_the_homogeneity_floor_ramps_from_a_diverse_corpus_to_one_on_a_single_subject() -> None:
    assert homogeneity_floor(0.03) == 0.0 and homogeneity_floor(DIVERSE_CORPUS) == 0.0
    assert homogeneity_floor(ONE_SUBJECT_CORPUS) == 1.0 and homogeneity_floor(0.9) == 1.0
    steps = [homogeneity_floor(h) for h in np.linspace(DIVERSE_CORPUS, ONE_SUBJECT_CORPUS, 7)]
    assert steps == sorted(steps) and 0.0 < steps[3] < 1.0


DIVERSE = [
    ("Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris, finished in 1889."),
    ("Photosynthesis", "Photosynthesis turns light into chemical energy in the leaves of green plants."),
    ("1966 final", "The 1966 football final was played at Wembley Stadium in London."),
    ("Ninth symphony", "Beethoven's ninth symphony ends with a choral finale."),
    ("Kilimanjaro", "Mount Kilimanjaro is the highest mountain in Africa, code QX4471 on old survey maps."),
]  # fmt: skip


def test_a_corpus_on_one_subject_gives_every_query_the_whole_lexical_weight(
    notes: CueRag, make_engine: EngineFactory
) -> None:
    """The notes are all about one library's storage, so a clear dense match among them can still
    be the wrong note: every query gets the whole weight. Passages on unrelated subjects keep the
    per-query share with its floor."""
    retriever = notes.retriever(CORPUS)
    assert homogeneity_floor(corpus_homogeneity(retriever.graph.chunk_vectors)) == 1.0
    params = {"lexical_weight": 0.4, "lexical_floor": 0.1}
    result = notes.query(CORPUS, QUESTION, params=make_params(**params))
    assert result.trace is not None and result.trace.lexical_weight == pytest.approx(0.4)
    off = notes.query(CORPUS, QUESTION, params=make_params(lexical_homogeneity=False, **params))
    share = lexical_share(retriever.graph.chunk_vectors @ retriever.embed_query(QUESTION))
    assert off.trace is not None and off.trace.lexical_weight == pytest.approx(0.4 * (0.1 + 0.9 * share), abs=1e-4)

    engine = make_engine()
    engine.index_documents("diverse", [make_document(t, x) for t, x in DIVERSE])
    diverse = engine.retriever("diverse")
    assert homogeneity_floor(corpus_homogeneity(diverse.graph.chunk_vectors)) == 0.0
    question = "Where was the 1966 football final played?"
    share = lexical_share(diverse.graph.chunk_vectors @ diverse.embed_query(question))
    kept = engine.query("diverse", question, params=make_params(**params))
    assert kept.trace is not None and kept.trace.lexical_weight == pytest.approx(0.4 * (0.1 + 0.9 * share), abs=1e-4)
    assert kept.trace.lexical_weight < 0.4


def test_the_homogeneity_is_of_what_a_query_searches(make_engine: EngineFactory) -> None:
    """Measured again for each snapshot, and for a filter's documents on their own: the notes
    alone are on one subject; with unrelated passages added the corpus is not; filtered back to
    the notes it is again."""
    engine = make_engine()
    notes = [make_document(t, x) for t, x in NOTES]
    params = make_params(lexical_weight=0.4, lexical_floor=0.0)
    engine.index_documents("mixed", notes)
    alone = engine.query("mixed", QUESTION, params=params)
    assert alone.trace is not None and alone.trace.lexical_weight == pytest.approx(0.4)

    engine.index_documents("mixed", [make_document(t, x) for t, x in DIVERSE])
    retriever = engine.retriever("mixed")
    assert homogeneity_floor(retriever.homogeneity()) < 1.0
    share = lexical_share(retriever.graph.chunk_vectors @ retriever.embed_query(QUESTION))
    mixed = engine.query("mixed", QUESTION, params=params)
    floor = homogeneity_floor(retriever.homogeneity())
    assert mixed.trace is not None
    assert mixed.trace.lexical_weight == pytest.approx(0.4 * (floor + (1 - floor) * share), abs=1e-4)
    assert mixed.trace.lexical_weight < 0.4

    only_notes = DocFilter(doc_ids=[d.id for d in notes])
    filtered = engine.query("mixed", QUESTION, params=params, filter=only_notes)
    assert filtered.trace is not None and filtered.trace.lexical_weight == pytest.approx(0.4)


def test_every_lexical_method_answers_on_a_corpus_without_a_word(make_engine: EngineFactory) -> None:
    # Punctuation and emoji are text, kept as chunks, but leave BM25 an empty vocabulary.
    engine = make_engine()
    odd = [make_document("", "... !!! ??? — ;; (( ))", "punct"), make_document("", "😀🎉 🇳🇴🇳🇴", "emoji")]
    engine.index_documents("odd", odd)
    question = "What is the capital of Norway?"
    assert engine.query("odd", question, method="bm25").chunks == []
    hybrid = engine.query("odd", question, method="hybrid")  # dense alone
    assert sorted(h.doc_id for h in hybrid.chunks) == ["emoji", "punct"]
    assert len(engine.query("odd", question, method="qiter").chunks) == 2


BACKUPS = [
    ("Nightly job", "The backup runs every night at two and copies the home folders."),
    ("Restore", "To restore a backup, mount the archive and copy the files back."),
    ("Rotation", "Old backups are rotated: seven daily and four weekly ones are kept."),
    ("Printer", "The office printer needs a new toner cartridge every month."),
]  # fmt: skip
ADDED = [
    ("Offsite", "An offsite backup is pushed to the second site after the nightly job."),
    ("Mail", "The mail server forwards messages for the whole office."),
]  # fmt: skip


def _lexical_by_title(engine: CueRag, query: str, *, stem: bool = True) -> dict[str, float]:
    graph = engine.retriever(CORPUS).graph
    scores = LexicalIndex(graph, stem=stem).scores(query).chunks
    return {graph.chunk_titles[c]: round(float(s), 5) for c, s in enumerate(scores)}


def test_stemmed_a_word_and_its_inflections_are_one_term(make_engine: EngineFactory) -> None:
    """The issue's case: "backups" found one of the backup notes, "backup" all of them."""
    engine = make_engine()
    engine.index_documents(CORPUS, [make_document(t, x) for t, x in BACKUPS])
    found = {t for t, s in _lexical_by_title(engine, "backups").items() if s > 0}
    assert found == {t for t, s in _lexical_by_title(engine, "backup").items() if s > 0}
    assert found == {"Nightly job", "Restore", "Rotation"}
    ranked = LexicalIndex(engine.retriever(CORPUS).graph, stem=True).ranked_chunks("Which notes are about backups?", 4)
    assert len(ranked) == 3
    # Unstemmed (the default, measured better on the SQLite docs), the plural finds only itself.
    assert {t for t, s in _lexical_by_title(engine, "backups", stem=False).items() if s > 0} == {"Rotation"}
    default = engine.query(CORPUS, "backups", method="bm25", params=make_params(top_n=4))
    assert [h.title for h in default.chunks] == ["Rotation"]


def test_the_stemmed_index_after_adds_and_deletes_is_a_fresh_index_of_the_same_texts(
    make_engine: EngineFactory,
) -> None:
    changed = make_engine()
    changed.index_documents(CORPUS, [make_document(t, x) for t, x in BACKUPS])
    before = _lexical_by_title(changed, "backups")
    changed.index_documents(CORPUS, [make_document(t, x) for t, x in ADDED])
    assert _lexical_by_title(changed, "backups")["Offsite"] > 0  # the new snapshot has the new terms
    gone = [make_document(t, x).id for t, x in BACKUPS if t in ("Restore", "Printer")]
    changed.delete_documents(CORPUS, gone)
    fresh = make_engine()
    kept = [(t, x) for t, x in [*BACKUPS, *ADDED] if t not in ("Restore", "Printer")]
    fresh.index_documents(CORPUS, [make_document(t, x) for t, x in kept])
    for query in ("backups", "backing up", "restored backup"):
        for stem in (True, False):
            assert _lexical_by_title(changed, query, stem=stem) == _lexical_by_title(fresh, query, stem=stem)
    assert "Restore" in before and "Restore" not in _lexical_by_title(changed, "backups")
