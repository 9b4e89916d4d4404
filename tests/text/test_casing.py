"""A query rewritten the way the corpus writes it: the same text for any letter case."""

from __future__ import annotations

import pytest

from cuerag.text.casing import CorpusCasing

TEXTS = [
    "The nightly report is mailed to finance. It runs in Python on the Corvane Labs servers.",
    "Corvane Labs makes drones. The drone team uses Python and mails a report.",
]
NAMES = ["Corvane Labs", "Halvard Optics"]


@pytest.mark.parametrize(
    "query",
    [
        "Which Python job at Corvane Labs mails finance?",
        "which python job at corvane labs mails finance?",
        "WHICH PYTHON JOB AT CORVANE LABS MAILS FINANCE?",
    ],
)
def test_any_casing_of_a_query_is_written_as_the_corpus_writes_it(query: str) -> None:
    casing = CorpusCasing(TEXTS, NAMES)
    # Names as the corpus wrote them, common words in the corpus's lower case, words the corpus
    # never uses ("job") in lower case; the first word of a sentence counts for nothing.
    assert casing.restore(query) == "which Python job at Corvane Labs mails finance?"


def test_a_name_the_corpus_knows_is_written_whole() -> None:
    casing = CorpusCasing(["Optics are lenses. The optics shop sells optics."], NAMES)
    assert casing.restore("who runs halvard optics and the optics shop?") == (
        "who runs Halvard Optics and the optics shop?"
    )
