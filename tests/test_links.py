"""Title links: which chunks a text names by title."""

from __future__ import annotations

from cuerag.links import TitleIndex, title_keys

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
    "lower-case start",  # 10: not a name
    "Charmed (season 1)",  # 11
    "Charmed",  # 12
    "1986",  # 13: a year, not a name
]


def named(index: TitleIndex, text: str, **kwargs: int) -> list[list[int]]:
    return index.named_in(text, **kwargs)


def test_title_keys_drop_a_trailing_qualifier_and_skip_non_names() -> None:
    assert title_keys("Lover Come Back (1961 film)") == {
        ("Lover", "Come", "Back", "1961", "film"),
        ("Lover", "Come", "Back"),
    }
    assert title_keys("lower-case start") == set()
    assert title_keys("X") == set()
    assert title_keys("1986") == set()
    assert title_keys("1986 FIFA World Cup") == {("1986", "FIFA", "World", "Cup")}
    assert title_keys("") == set()
    assert title_keys("?!") == set()


def test_a_text_names_titles_in_order_of_first_mention() -> None:
    index = TitleIndex(TITLES)
    text = "The film Maximum Overdrive was shot in Leland, North Carolina in 1986; see Lover Come Back."
    assert named(index, text) == [[0], [2], [5]]


def test_matching_keeps_case_and_folds_accents() -> None:
    index = TitleIndex(TITLES)
    assert named(index, "He sold the brand for euros.") == []
    # The chunks of one title come as one group: a mention names one page.
    assert named(index, "The ballet Aschenbrodel and a Brand of its own, paid in Euro.") == [[4], [1, 9], [3]]


def test_a_full_title_is_named_before_one_with_a_qualifier() -> None:
    index = TitleIndex(TITLES)
    assert named(index, "She starred in Charmed for years.") == [[12]]
    assert named(index, "She starred in Charmed (season 1).") == [[12], [11]]  # both are written


def test_a_one_word_title_does_not_count_at_the_start_of_a_sentence() -> None:
    index = TitleIndex(TITLES)
    assert named(index, "Brand is a play. Euro coins exist.") == []
    assert named(index, "A play, Brand, and the Euro.") == [[1, 9], [3]]


def test_titles_do_not_run_across_sentences_but_initials_do_not_end_one() -> None:
    index = TitleIndex(TITLES)
    assert named(index, "He lived in Paris. Texas came later.") == []
    assert named(index, "He lived in Paris, Texas for years.") == [[7], [8]]
    assert named(index, "He joined Nottingham Forest F.C. Euro fans cheered.") == [[6], [3]]


def test_a_lower_case_text_matches_titles_of_two_or_more_words_without_case() -> None:
    index = TitleIndex(TITLES)
    assert named(index, "who directed maximum overdrive near brand and euro?") == [[0]]


def test_a_chunks_own_title_is_not_a_link() -> None:
    index = TitleIndex(TITLES)
    # Chunk 1's text names its own title (shared with chunk 9, the same document) and one other.
    assert named(index, "Critics compared Brand with Maximum Overdrive.", exclude_titles_of=1) == [[0]]
    assert named(index, "Nothing here names a title.") == []
    assert TitleIndex([]).named_in("Maximum Overdrive") == []


def test_a_title_shared_by_many_chunks_is_capped_per_title() -> None:
    index = TitleIndex(["Annual Report"] * 100 + ["Budget"])
    assert named(index, "See the Annual Report and the Budget.", per_title=10) == [list(range(10)), [100]]
    assert [len(g) for g in named(index, "See the Annual Report, twice: Annual Report.")] == [64]


def test_a_title_written_as_a_name_is_matched_without_case_in_any_text() -> None:
    index = TitleIndex(["Reign of Terror", "Monster Trucks (film)", "Political party", "Norris Mountain (Montana)"])
    assert named(index, "Who ruled France during the reign of terror?") == [[0]]
    assert named(index, "Where is Monster trucks set, near norris mountain?") == [[1], [3]]
    # Written both ways, it is one title named once.
    assert named(index, "The Reign of Terror, or the reign of terror.") == [[0]]
    # A title in sentence case is a common phrase: it is matched only as written.
    assert named(index, "Which political party won? The Political Party did.") == []
    assert named(index, "He left the Political party.") == [[2]]
