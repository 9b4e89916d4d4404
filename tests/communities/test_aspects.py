"""A broad question's listed aspects (cuerag.communities.aspects): split at clause boundaries,
each a search whose top documents get a bonus falling with rank."""

from __future__ import annotations

import numpy as np

from cuerag.communities.aspects import ASPECT_BONUS, MAX_ASPECTS, TOP_PER_ASPECT, aspect_bonus, question_aspects


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
