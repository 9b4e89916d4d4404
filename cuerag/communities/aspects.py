"""The aspects a broad question lists, each a search of its own.

A broad question often spells out what it wants ("what can I call in a query: for text and
numbers, totals over groups, dates and times?"), and each aspect is usually one document of the
theme. Embedded whole, the question is the average of its aspects and matches best the pages about
all of them at once (overviews); each aspect embedded alone finds its own page. Global search
therefore gives the top `TOP_PER_ASPECT` documents of each aspect a bonus that falls with their
rank, on top of the question's own ranking. A question that lists nothing (no clause boundary)
has no aspects and ranks as before.

Splitting is by punctuation and the connectives that open a listed item, not by any word list of
topics: it holds for any subject, though only for languages that mark lists this way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

# Measured on the SQLite and Git global sets (docs/global.md, 2026-11-28): of 3 × 4 × 2 settings
# (top 1, 2, 3, 5 documents per aspect; bonus 0.2, 0.4, 0.8 of the [0, 1] question score; dense or
# dense+BM25 per aspect), this one is better than no aspects at 10 and 20 on both sets. It was
# chosen on those 40 questions, so read its margin as optimistic.
TOP_PER_ASPECT = 3
ASPECT_BONUS = 0.4
# Clause boundaries: dashes, colons, semicolons, brackets, question and exclamation marks, commas,
# and sentence ends.
_BOUNDARY = re.compile(r"\s*(?:[—–;:?!()]|,|\.\s|\s-\s)\s*")
# Words that open a listed item without being part of it.
_OPENER = re.compile(r"^(?:and|or|for example|e\.g\.|such as|things like|like|including|plus)\s+", re.IGNORECASE)
_WORD = re.compile(r"\w\w+")  # words of two letters or more ("e.g" is none)
MIN_WORDS = 2  # a one-word fragment ("SQLite", "etc") is no aspect
# Each aspect is one more embedding and one pass over the chunk vectors: a question of many short
# clauses (a list pasted in) keeps its first ones. Broad questions of the global sets list at most 11.
MAX_ASPECTS = 12


def question_aspects(question: str) -> list[str]:
    """The clauses of a question, as separate searches; [] when it has a single clause."""
    parts = []
    for part in _BOUNDARY.split(question):
        part = _OPENER.sub("", part.strip())
        if len(_WORD.findall(part)) >= MIN_WORDS:
            parts.append(part)
    return parts[:MAX_ASPECTS] if len(parts) > 1 else []


def aspect_bonus(aspect_scores: Sequence[np.ndarray]) -> np.ndarray | None:
    """Each document's bonus from the aspects' own document scores (None without aspects)."""
    if not aspect_scores:
        return None
    bonus = np.zeros(len(aspect_scores[0]), dtype=np.float64)
    for scores in aspect_scores:
        for rank, d in enumerate(np.argsort(-scores, kind="stable")[:TOP_PER_ASPECT]):
            bonus[d] += ASPECT_BONUS / (rank + 1)
    return bonus
