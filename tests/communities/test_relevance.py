"""Global search's dense channel discounts what every page of the corpus shares: a broad question
matches an overview page (a little of every subject) by cosine, but the pages specific to the
question's subject come first once the question's component along the corpus direction is
removed."""

from __future__ import annotations

import numpy as np

from cuerag.communities.documents import DocTable, normalized
from cuerag.communities.relevance import specific_dense


def _docs(vectors: np.ndarray) -> DocTable:
    n = len(vectors)
    return DocTable(
        doc_ids=[f"d{i}" for i in range(n)],
        doc_chunks=[[i] for i in range(n)],
        chunk_doc=np.arange(n),
        vectors=normalized(vectors),
        titles=[f"d{i}" for i in range(n)],
    )


def test_the_overview_page_no_longer_outranks_the_subject_pages() -> None:
    common = np.array([1.0, 0.0, 0.0, 0.0, 0.0])  # what every page of the corpus is about
    subjects = np.eye(5)[1:]  # four subjects
    specific = [0.5 * common + subjects[i % 4] for i in range(8)]  # two pages per subject
    overview = common + 0.3 * subjects.sum(axis=0)  # a little of every subject
    docs = _docs(np.array([*specific, overview]))
    question = normalized((3 * common + subjects[0])[None, :])[0]  # broad, about subject 0
    dense = docs.vectors @ question
    assert int(np.argmax(dense)) == 8  # by cosine, the overview comes first
    corrected = specific_dense(docs, dense, question)
    order = [int(i) for i in np.argsort(-corrected)]
    assert set(order[:2]) == {0, 4}  # the two pages on subject 0
    assert order.index(8) > 1
