"""A broad question's listed aspects (cuerag.communities.aspects): split at clause boundaries,
each a search whose top documents get a bonus falling with rank."""

from __future__ import annotations

import numpy as np

from cuerag.communities.aspects import (
    ASPECT_BONUS,
    KEEP_FIRST,
    MAX_ASPECTS,
    TOP_PER_ASPECT,
    aspect_bonus,
    aspect_scores,
    kept_first,
    question_aspects,
)
from cuerag.communities.documents import DocTable, normalized


def test_a_question_listing_aspects_is_split_into_them() -> None:
    question = (
        "What can I call inside a query — for text and numbers, totals over groups, dates and times, "
        "and running calculations over ordered rows?"
    )
    assert question_aspects(question) == [
        "What can I call inside a query",
        "for text and numbers",
        "totals over groups",
        "dates and times",
        "running calculations over ordered rows",
    ]


def test_a_single_clause_has_no_aspects_and_one_word_fragments_are_dropped() -> None:
    assert question_aspects("Which documents discuss backups?") == []
    assert question_aspects("Backups, etc.") == []
    assert question_aspects("How are backups made, e.g. nightly, and where are they kept?") == [
        "How are backups made",
        "where are they kept",
    ]


def test_each_aspect_lifts_its_own_top_documents_by_rank() -> None:
    first = np.array([0.9, 0.1, 0.5, 0.2, 0.0])
    second = np.array([0.0, 0.8, 0.1, 0.3, 0.2])
    bonus = aspect_bonus([first, second])
    assert bonus is not None
    # Document 0 is first of aspect one; 1 first of aspect two; 2 second of one and third of two.
    assert bonus[0] == ASPECT_BONUS and bonus[1] == ASPECT_BONUS
    assert np.isclose(bonus[2], ASPECT_BONUS / 2)
    assert np.count_nonzero(bonus) <= 2 * TOP_PER_ASPECT
    assert aspect_bonus([]) is None


def test_a_question_of_many_clauses_keeps_a_bounded_number() -> None:
    question = ", ".join(f"item{i} words" for i in range(600))
    assert question_aspects(question) == [f"item{i} words" for i in range(MAX_ASPECTS)]


def test_the_questions_own_best_documents_stay_first() -> None:
    # The question's own ranking puts 3 then 1 first; its clauses' bonuses favour 0, 2 and 4.
    own = np.array([0.2, 0.8, 0.1, 0.9, 0.0])
    blended = own + np.array([1.0, 0.0, 0.9, 0.0, 0.95])
    order = list(np.argsort(-kept_first(own, blended), kind="stable"))
    assert KEEP_FIRST == 2
    assert order[:2] == [3, 1]  # not displaced by the clauses' top hits
    assert order[2:] == [0, 2, 4]  # the rest as blended


def test_a_page_about_an_aspect_outranks_one_that_mentions_it_inside() -> None:
    # Two pages of three chunks each, plus three pages on other subjects. Page 0 opens on the
    # aspect; page 1 is about something else and has one chunk a little nearer the aspect deep inside.
    aspect = np.array([0.0, 1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    chunk_cosines = np.array([0.80, 0.20, 0.10, 0.05, 0.10, 0.82, 0.10, 0.20, 0.30], dtype=np.float32)
    vectors = normalized(np.eye(5, dtype=np.float32)[[1, 2, 3, 4, 0]])
    docs = DocTable(
        doc_ids=[f"d{i}" for i in range(5)],
        doc_chunks=[[0, 1, 2], [3, 4, 5], [6], [7], [8]],
        chunk_doc=np.array([0, 0, 0, 1, 1, 1, 2, 3, 4]),
        vectors=vectors,
        titles=[f"d{i}" for i in range(5)],
    )
    scores = aspect_scores(docs, chunk_cosines, aspect)
    assert int(np.argmax(scores)) == 0  # by its best chunk alone, page 1 would come first


def test_a_question_of_blanks_splits_in_linear_time() -> None:
    """A question of 4,000 blanks (the tools' cap) took 0.9 s to split: the boundary's leading
    blanks backtracked over the rest of each run."""
    import time

    from cuerag.config import MAX_QUERY_CHARS

    for question in (" " * MAX_QUERY_CHARS, "\t" * (MAX_QUERY_CHARS - 1) + "a", "\u2003" * MAX_QUERY_CHARS):
        began = time.perf_counter()
        assert question_aspects(question) == []
        assert time.perf_counter() - began < 0.1
    assert question_aspects("totals over groups  ;  dates and times") == ["totals over groups", "dates and times"]
