"""Which questions global search answers with the corpus's top themes (an overview) and which by
searching the themes for a subject."""

import pytest
from bounded import finishes_in_a_child

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


@pytest.mark.parametrize(
    "question",
    [
        "What  are the main topics ?",
        "what\tis in\nthe corpus",
        "WHAT IS THIS COLLECTION ABOUT ?!",
        "what  the docs cover",
    ],
)
def test_blanks_and_closing_punctuation_do_not_change_the_answer(question: str) -> None:
    assert is_overview(question)


def test_a_question_built_to_backtrack_is_answered_at_once() -> None:
    """Before: "what", blanks, "docs about", blanks and one letter, 4,000 characters (the tools'
    cap), backtracked for 48 s in one regular expression search (cubic: the blanks after "what",
    `.*`, and the two `\\s*` before the end), holding the GIL, so one global_search call stalled the
    whole server. Run in a child process, so that a regression fails the bound instead of holding
    this one."""
    from cuerag.config import MAX_QUERY_CHARS

    shapes = [
        "'what' + ' ' * 1330 + 'docs about' + ' ' * 2655 + 'x'",
        "'main topics' + ' ' * 3988 + 'x'",
        "'what' + ' ' * 3995 + 'x'",
        "'what ' * 400 + 'docs ' * 399",
        "('what docs about ' * 250)[:3999] + 'x'",
        "'overview' + ' ?' * 1990 + 'x'",
    ]
    finishes_in_a_child(
        "from cuerag.communities.theme_search import is_overview\n"
        f"for q in [{', '.join(shapes)}]:\n"
        f"    assert len(q) <= {MAX_QUERY_CHARS}, len(q)\n"
        "    assert not is_overview(q)\n"
    )
