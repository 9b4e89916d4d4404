"""A theme's extractive title: its most specific terms, one word once (not "errors · logging · error",
as Flask's documentation got)."""

from __future__ import annotations

import numpy as np

from cuerag.communities.reports import ReportWriter


def writer(vocabulary: list[str], tfidf: list[list[float]]) -> ReportWriter:
    # Only what `terms` reads: the vocabulary, the TF-IDF rows and their mean over the corpus.
    out = ReportWriter.__new__(ReportWriter)
    out.vocabulary = vocabulary
    out.tfidf = np.array(tfidf)
    out.corpus_mean = out.tfidf.mean(axis=0)
    return out


def test_a_plural_beside_its_singular_is_one_term() -> None:
    vocabulary = ["errors", "logging", "error", "debug", "template", "boxes", "box"]
    rows = [[0.9, 0.8, 0.7, 0.6, 0.0, 0.5, 0.4], [0.0, 0.0, 0.0, 0.0, 0.9, 0.0, 0.0]]
    assert writer(vocabulary, rows).terms([0]) == ["errors", "logging", "debug"]
    assert writer(vocabulary, rows).terms([0], k=5) == ["errors", "logging", "debug", "boxes"]


def test_words_that_share_a_stem_but_not_as_plural_stay_apart() -> None:
    vocabulary = ["view", "views", "viewer", "class", "classes"]
    rows = [[0.9, 0.8, 0.7, 0.6, 0.5], [0.0, 0.0, 0.0, 0.0, 0.0]]
    assert writer(vocabulary, rows).terms([0], k=4) == ["view", "viewer", "class"]
