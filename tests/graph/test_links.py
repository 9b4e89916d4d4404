"""Title mentions: which chunks a text names by title, whatever its letter case, and how specific
each title is in its corpus."""

from __future__ import annotations

import pytest
from bounded import finishes_in_a_child

from cuerag.graph.title_mentions import TitleIndex, TitleSpecificity, title_keys

TITLES = [
    "Maximum Overdrive",  # 0
    "Brand (play)",  # 1
    "Leland, North Carolina",  # 2
    "Euro",  # 3
    "Aschenbrödel",  # 4
    "Lover Come Back (1961 film)",  # 5
    "Nottingham Forest F.C.",  # 6
    "Paris, Texas",  # 7
    "Texas",  # 8
    "Brand (play)",  # 9: a second chunk of the same document
    "lower-case start",  # 10
    "Charmed (season 1)",  # 11
    "Charmed",  # 12
    "1986",  # 13
]


def named(index: TitleIndex, text: str, **kwargs: int) -> list[list[int]]:
    return [n.chunks for n in index.named_in(text, **kwargs)]


def test_title_keys_drop_a_trailing_qualifier_and_fold_case() -> None:
    assert title_keys("Lover Come Back (1961 film)") == {
        ("lover", "come", "back", "1961", "film"),
        ("lover", "come", "back"),
    }
    assert title_keys("open() [C API]") == {("open", "c", "api"), ("open",)}
    assert title_keys("lower-case start") == {("lower", "case", "start")}
    assert title_keys("X") == set()
    assert title_keys("") == set()
    assert title_keys("?!") == set()


def test_a_text_names_titles_in_order_of_first_mention() -> None:
    index = TitleIndex(TITLES)
    text = "The film Maximum Overdrive was shot in Leland, North Carolina in 1986; see Lover Come Back."
    assert named(index, text) == [[0], [2], [13], [5]]


@pytest.mark.parametrize(
    "text",
    [
        "The ballet Aschenbrodel and a Brand of its own, paid in Euro; see Maximum Overdrive.",
        "the ballet aschenbrödel and a brand of its own, paid in euro; see maximum overdrive.",
        "THE BALLET ASCHENBRODEL AND A BRAND OF ITS OWN, PAID IN EURO; SEE MAXIMUM OVERDRIVE.",
    ],
)
def test_matching_ignores_case_and_accents(text: str) -> None:
    # The chunks of one title come as one group: a mention names one page.
    assert named(TitleIndex(TITLES), text) == [[4], [1, 9], [3], [0]]


def test_a_full_title_is_named_before_one_with_a_qualifier() -> None:
    index = TitleIndex(TITLES)
    assert named(index, "She starred in Charmed for years.") == [[12]]
    assert named(index, "She starred in Charmed (season 1).") == [[12], [11]]  # both are written


def test_titles_do_not_run_across_sentences_but_initials_do_not_end_one() -> None:
    index = TitleIndex(TITLES)
    assert named(index, "He lived in Paris. Texas came later.") == [[8]]
    assert named(index, "He lived in Paris, Texas for years.") == [[7], [8]]
    assert named(index, "He joined Nottingham Forest F.C. Euro fans cheered.") == [[6], [3]]


def test_a_chunks_own_title_is_not_a_link() -> None:
    index = TitleIndex(TITLES)
    # Chunk 1's text names its own title (shared with chunk 9, the same document) and one other.
    assert named(index, "Critics compared Brand with Maximum Overdrive.", exclude_titles_of=1) == [[0]]
    assert named(index, "Nothing here names a title.") == []
    assert TitleIndex([]).named_in("Maximum Overdrive") == []
    flutes = TitleIndex(["Flute sonata", "Flute Sonata (Prokofiev)"])
    # The generic page's text names the Prokofiev sonata's key: the same words as its own title.
    assert named(flutes, "A Flute Sonata is a sonata for flute.", exclude_titles_of=0) == []
    assert named(flutes, "A Flute Sonata is a sonata for flute.") == [[0]]


def test_a_title_shared_by_many_chunks_is_capped_per_title() -> None:
    index = TitleIndex(["Annual Report"] * 100 + ["Budget"])
    assert named(index, "See the Annual Report and the Budget.", per_title=10) == [list(range(10)), [100]]
    assert [len(g) for g in named(index, "See the Annual Report, twice: annual report.")] == [64]


def test_specificity_falls_as_more_documents_name_a_title() -> None:
    titles = ["Python", "Maximum Overdrive", "Leland", "Notes A", "Notes B", "Notes C", "Notes D"]
    texts = [
        "Python is a language.",
        "Maximum Overdrive was shot in Leland.",
        "Leland is a town.",
        "A python script, written in python.",
        "Python runs the job.",
        "The job is in PYTHON; Leland has it.",
        "Nothing else.",
    ]
    index = TitleIndex(titles)
    spec = TitleSpecificity(index, texts, [f"d{i}" for i in range(len(texts))])

    def of(title: str) -> float:
        return spec.of(index.named_in(title)[0].title)

    assert spec.naming_documents(index.named_in("python")[0].title) == 3  # whatever the case
    assert of("Maximum Overdrive") == pytest.approx(1.0)  # no other document names it
    assert 0.0 < of("Python") < of("Leland") < of("Maximum Overdrive")


def test_a_long_title_is_read_in_linear_time() -> None:
    """Before: the trailing qualifier was cut by a regular expression searched from every blank and
    bracket, quadratic in the title's length; a markdown file whose first heading (its title) is
    200,000 blanks and a word took minutes on every load of the corpus (each graph builds its
    TitleIndex). Run in a child process, so that a regression fails the bound instead of hanging."""
    finishes_in_a_child(
        "from cuerag.graph.title_mentions import TitleIndex, title_keys\n"
        "n = 200_000\n"
        "assert title_keys(' ' * n + 'xy (film)') == {('xy', 'film'), ('xy',)}\n"
        "assert title_keys('(a' + ' ' * n + ')x') == {('a', 'x')}\n"
        "TitleIndex([' ' * n + 'x', '[' * n + 'y)', 'Lover Come Back (1961 film)'])\n"
    )
