"""Which questions global search answers with the corpus's top themes (an overview) and which by
searching the themes for a subject."""

import pytest

from cuerag.communities.theme_search import is_overview


@pytest.mark.parametrize(
    "question",
    [
        "",
        "What are the main topics?",
        "What are the main topics of these notes?",
        "What are the key themes in this corpus?",
        "What is in this corpus?",
        "What does the documentation cover?",
        "What is this collection about?",
        "Give me an overview.",
        "overview of the documentation",
        "What are the main topics of this manual?",
        "What is this manual about?",
        "What does this guide cover?",
        "Give me an overview of the handbook",
        "Summarize the documentation",
        "Give me a summary of the docs.",
        "What is in these docs?",
        "What topics are covered?",
        "What are the main topics covered in this book?",
    ],
)
def test_a_question_about_the_corpus_itself_is_an_overview(question: str) -> None:
    assert is_overview(question)


@pytest.mark.parametrize(
    "question",
    [
        "What does the documentation say about security?",
        "What does this documentation say about the LaTeX writer?",
        "Give an overview of the security model",
        "What are the main topics of the LaTeX writer page?",
        "Which documents in the collection cover math?",
        "What is the documentation's advice on raw HTML?",
        "What does the manual say about blueprints?",
        "Summarize the security model",
        "What topics does the security page cover?",
        "What is the guide to deployment about?",
        "summary of the tutorial",
    ],
)
def test_a_question_that_names_a_subject_is_not_an_overview(question: str) -> None:
    assert not is_overview(question)
