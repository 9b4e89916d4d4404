"""The aspects a broad question lists, each a search of its own.

A broad question often spells out what it wants ("what can I call in a query: for text and
numbers, totals over groups, dates and times?"), and each aspect is usually one document of the
theme. Embedded whole, the question is the average of its aspects and matches best the pages about
all of them at once (overviews); each aspect embedded alone finds its own page. Global search
therefore gives the top `TOP_PER_ASPECT` documents of each aspect a bonus that falls with their
rank (`aspect_scores`: a document's best chunk and its opening chunk, each by cosine with the
corpus direction removed, fused by rank: a page about the aspect says so where it starts, while a
page that mentions it in passing matches only somewhere inside), on top of the question's own
ranking. A question that lists nothing (no clause boundary) has no aspects and ranks as before.

The aspects widen the answer; they never displace the question's own best matches: the first
`KEEP_FIRST` documents of the question's own ranking stay first. A question that is not broad at
all (a multi-hop lookup has clauses too: "an application registers a function whose name is too
long, SQLite refuses with a result code: what is its value?") otherwise lost the pages it names
to the top hits of its clauses.

Splitting is by punctuation and the connectives that open a listed item, not by any word list of
topics: it holds for any subject, though only for languages that mark lists this way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from cuerag.communities.documents import DocTable
from cuerag.communities.relevance import per_doc_max, rrf_scores, specific_dense

# Measured on the SQLite and Git global sets (docs/global.md, 2026-11-28): of 3 × 4 × 2 settings
# (top 1, 2, 3, 5 documents per aspect; bonus 0.2, 0.4, 0.8 of the [0, 1] question score; dense or
# dense+BM25 per aspect), this one is better than no aspects at 10 and 20 on both sets. It was
# chosen on those 40 questions, so read its margin as optimistic.
TOP_PER_ASPECT = 3
ASPECT_BONUS = 0.4
# Clause boundaries: dashes, colons, semicolons, brackets, question and exclamation marks, commas,
# and sentence ends. No leading `\s*` (each part is stripped anyway): tried at every character of
# a run of blanks it backtracked over the rest of the run, quadratic (4,000 spaces: 0.9 s a call).
_BOUNDARY = re.compile(r"(?:[—–;:?!()]|,|\.\s|\s-\s)\s*")
# Words that open a listed item without being part of it.
_OPENER = re.compile(r"^(?:and|or|for example|e\.g\.|such as|things like|like|including|plus)\s+", re.IGNORECASE)
_WORD = re.compile(r"\w\w+")  # words of two letters or more ("e.g" is none)
MIN_WORDS = 2  # a one-word fragment ("SQLite", "etc") is no aspect
# Each aspect is one more embedding and one pass over the chunk vectors: a question of many short
# clauses (a list pasted in) keeps its first ones. Broad questions of the global sets list at most 11.
MAX_ASPECTS = 12
# Measured on the SQLite and Git sets' local (multi-hop) questions with `global` (docs/global.md,
# 2026-11-28): keeping the question's top 2 first restores its recall at 2 to the figure without
# aspects and leaves the global sets' recall at 5, 10 and 20 unchanged; 1 restores only part.
KEEP_FIRST = 2


def question_aspects(question: str) -> list[str]:
    """The clauses of a question, as separate searches; [] when it has a single clause."""
    parts = []
    for part in _BOUNDARY.split(question):
        part = _OPENER.sub("", part.strip())
        if len(_WORD.findall(part)) >= MIN_WORDS:
            parts.append(part)
    return parts[:MAX_ASPECTS] if len(parts) > 1 else []


def aspect_scores(docs: DocTable, chunk_cosines: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Each document's score for one aspect, from the aspect's cosine with every chunk.

    Measured on the SQLite and Git global sets and their local questions (docs/global.md,
    2026-11-28, third session): fusing the opening chunk's rank with the best chunk's gains
    0.01-0.03 recall at 5, 10 and 20 on both global sets and 0.01-0.03 at 5 on the local ones;
    the opening chunk alone gains as much on Git and loses at 10 on SQLite."""
    best = specific_dense(docs, per_doc_max(chunk_cosines, docs.chunk_doc, len(docs)), vector)
    lead = specific_dense(docs, chunk_cosines[docs.lead_chunks].astype(np.float64), vector)
    return rrf_scores([best, lead])


def aspect_bonus(aspect_scores: Sequence[np.ndarray]) -> np.ndarray | None:
    """Each document's bonus from the aspects' own document scores (None without aspects)."""
    if not aspect_scores:
        return None
    bonus = np.zeros(len(aspect_scores[0]), dtype=np.float64)
    for scores in aspect_scores:
        for rank, d in enumerate(np.argsort(-scores, kind="stable")[:TOP_PER_ASPECT]):
            bonus[d] += ASPECT_BONUS / (rank + 1)
    return bonus


def kept_first(own: np.ndarray, blended: np.ndarray) -> np.ndarray:
    """`blended`, with the KEEP_FIRST best documents by `own` lifted above all others, in
    their own order (the scores stay a ranking: higher first)."""
    out = blended.astype(np.float64, copy=True)
    top = np.argsort(-own, kind="stable")[:KEEP_FIRST]
    ceiling = float(out.max()) if len(out) else 0.0
    for rank, d in enumerate(top):
        out[d] = ceiling + (KEEP_FIRST - rank) * 1e-3
    return out
